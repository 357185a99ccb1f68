// Package internal_test keeps the arrows of docs/architecture.md true: it
// reads the imports of every package of the module (its non-test files,
// with and without the failpoints build tag) and fails when one imports a
// package it must not.
package internal_test

import (
	"errors"
	"fmt"
	"go/build"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const module = "github.com/droverhq/drover/"

// importRule forbids packages matched by from to import (directly, or
// through others when transitive) a package matched by to. Paths are
// relative to the module.
type importRule struct {
	name       string
	from, to   func(pkg string) bool
	transitive bool
}

func under(prefix string) func(string) bool {
	return func(p string) bool { return p == prefix || strings.HasPrefix(p, prefix+"/") }
}

func anyPkg(string) bool { return true }

// importRules are the arrows that must hold.
var importRules = []importRule{
	{name: "nothing imports cmd", from: anyPkg, to: under("cmd")},
	{name: "only cmd/drover imports internal/cli", from: func(p string) bool { return p != "cmd/drover" }, to: under("internal/cli")},
	{name: "subjects imports nothing of ours", from: under("subjects"), to: anyPkg},
	{name: "internal/sandbox imports nothing of ours", from: under("internal/sandbox"), to: anyPkg},
	{name: "internal/agenttest imports nothing of ours", from: under("internal/agenttest"), to: anyPkg},
	{name: "only tests import internal/agenttest", from: func(p string) bool { return !under("internal/agenttest")(p) }, to: under("internal/agenttest")},
	// The pipeline imports consumers for the seam types it shares with it
	// (Msg, Outcome, Action, ErrClaimLost): the arrow runs pipeline ->
	// consumers, never back, so the public package stays usable without
	// Drover's internal ones.
	{name: "consumers does not depend on internal/pipeline", from: under("consumers"), to: under("internal/pipeline"), transitive: true},
	{name: "internal/runner does not depend on internal/pipeline", from: under("internal/runner"), to: under("internal/pipeline"), transitive: true},
	{name: "internal/workspace does not depend on internal/pipeline", from: under("internal/workspace"), to: under("internal/pipeline"), transitive: true},
	{name: "nothing imports the lab (internal/benchlab stays out of the binary)", from: anyPkg, to: under("internal/benchlab")},
}

// violations lists every import in graph (package -> the packages of ours
// it imports) that breaks a rule, naming the rule and the path of imports.
func violations(graph map[string][]string, rules []importRule) []string {
	var out []string
	pkgs := make([]string, 0, len(graph))
	for p := range graph {
		pkgs = append(pkgs, p)
	}
	slices.Sort(pkgs)
	for _, r := range rules {
		for _, p := range pkgs {
			if !r.from(p) {
				continue
			}
			// Breadth-first over the imports; path[q] is how p reaches q.
			path := map[string][]string{p: {p}}
			queue := []string{p}
			for len(queue) > 0 {
				q := queue[0]
				queue = queue[1:]
				for _, imp := range graph[q] {
					if _, seen := path[imp]; seen {
						continue
					}
					path[imp] = append(slices.Clone(path[q]), imp)
					if r.to(imp) {
						out = append(out, fmt.Sprintf("%s: %s", r.name, strings.Join(path[imp], " -> ")))
					}
					if r.transitive {
						queue = append(queue, imp)
					}
				}
			}
		}
	}
	return out
}

func TestImportRulesCatchViolations(t *testing.T) {
	tests := []struct {
		name  string
		graph map[string][]string
		want  []string
	}{
		{"clean", map[string][]string{
			"cmd/drover": {"internal/cli"}, "internal/cli": {"internal/pipeline", "subjects"},
			"internal/pipeline": {"consumers", "internal/runner", "subjects"}, "internal/runner": {"subjects"},
			"consumers": {"subjects"}, "subjects": nil,
		}, nil},
		{"cli imported by a library", map[string][]string{
			"internal/worker": {"internal/cli"}, "internal/cli": nil,
		}, []string{"only cmd/drover imports internal/cli: internal/worker -> internal/cli"}},
		{"cmd imported", map[string][]string{
			"internal/bench": {"cmd/drover"}, "cmd/drover": nil,
		}, []string{"nothing imports cmd: internal/bench -> cmd/drover"}},
		{"subjects imports ours", map[string][]string{
			"subjects": {"internal/redact"}, "internal/redact": nil,
		}, []string{"subjects imports nothing of ours: subjects -> internal/redact"}},
		{"consumers reaches pipeline through another package", map[string][]string{
			"consumers": {"internal/redact"}, "internal/redact": {"internal/pipeline"}, "internal/pipeline": nil,
		}, []string{"consumers does not depend on internal/pipeline: consumers -> internal/redact -> internal/pipeline"}},
		{"runner subpackage imports pipeline", map[string][]string{
			"internal/runner/x": {"internal/pipeline"}, "internal/pipeline": nil,
		}, []string{"internal/runner does not depend on internal/pipeline: internal/runner/x -> internal/pipeline"}},
		{"the lab linked into the binary", map[string][]string{
			"cmd/drover": {"internal/cli"}, "internal/cli": {"internal/benchlab"}, "internal/benchlab": {"internal/bench"}, "internal/bench": nil,
		}, []string{"nothing imports the lab (internal/benchlab stays out of the binary): internal/cli -> internal/benchlab"}},
		{"workspace imports pipeline", map[string][]string{
			"internal/workspace": {"internal/state"}, "internal/state": {"internal/pipeline"}, "internal/pipeline": nil,
		}, []string{"internal/workspace does not depend on internal/pipeline: internal/workspace -> internal/state -> internal/pipeline"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, violations(tc.graph, importRules))
		})
	}
}

// TestImportRules checks the module's real import graph, with the default
// build tags and with failpoints.
func TestImportRules(t *testing.T) {
	for _, tags := range [][]string{nil, {"failpoints"}} {
		graph := moduleImports(t, tags)
		require.Contains(t, graph, "subjects", "the module's packages were read")
		require.Contains(t, graph, "consumers")
		assert.Empty(t, violations(graph, importRules), "build tags %v", tags)
	}
}

// moduleImports reads, for every package of the module, the packages of
// ours that its non-test files import.
func moduleImports(t *testing.T, tags []string) map[string][]string {
	t.Helper()
	ctx := build.Default
	ctx.BuildTags = tags
	root, err := filepath.Abs("..")
	require.NoError(t, err)
	graph := map[string][]string{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if name := d.Name(); path != root && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "vendor") {
			return filepath.SkipDir
		}
		pkg, err := ctx.ImportDir(path, build.ImportComment)
		var noGo *build.NoGoError
		if errors.As(err, &noGo) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		rel, err := filepath.Rel(root, path)
		if err != nil {
			return err
		}
		var ours []string
		for _, imp := range pkg.Imports {
			if strings.HasPrefix(imp, module) {
				ours = append(ours, strings.TrimPrefix(imp, module))
			}
		}
		graph[filepath.ToSlash(rel)] = ours
		return nil
	})
	require.NoError(t, err)
	return graph
}
