package config

import (
	"bufio"
	"bytes"
	"iter"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.yaml.in/yaml/v3"

	"github.com/droverhq/drover/internal/runner"
)

// referenceDoc is the configuration reference. Each of its tables whose
// first column is headed "key" names one key per row, as a dotted path in
// backticks: `worker.concurrency`, `roles.<role>.exec.argv`,
// `workspace.setup[].argv`. A <placeholder> stands for a map's key or for
// one of the three roles.
var referenceDoc = filepath.Join("..", "..", "docs", "configuration.md")

// TestConfigReferenceNamesEveryKey keeps docs/configuration.md and the
// file format in step: every key `drover config example` prints and every
// key the file accepts is documented (a block such as worker: by its
// keys), and the doc names no key that does not exist.
func TestConfigReferenceNamesEveryKey(t *testing.T) {
	t.Parallel()
	doc, err := os.ReadFile(referenceDoc)
	require.NoError(t, err)
	documented := docKeys(t, doc)
	require.NotEmpty(t, documented, "no key table in %s", referenceDoc)

	accepted := map[string]bool{}
	typeKeys(reflect.TypeFor[File](), "", accepted)

	var root yaml.Node
	require.NoError(t, yaml.Unmarshal(Example, &root))
	printed := map[string]bool{}
	exampleKeys(t, root.Content[0], reflect.TypeFor[File](), "", printed)
	require.Contains(t, printed, "worker.concurrency", "the example's keys were read")

	var unprinted, undocumented, unknown []string
	for _, k := range sortedKeys(printed) {
		if !documented[k] && !isBlock(k, accepted) {
			unprinted = append(unprinted, k)
		}
	}
	for _, k := range sortedKeys(accepted) {
		if !documented[k] && !isBlock(k, accepted) {
			undocumented = append(undocumented, k)
		}
	}
	for _, k := range sortedKeys(documented) {
		if !accepted[k] {
			unknown = append(unknown, k)
		}
	}
	require.Empty(t, unprinted, "`drover config example` prints these keys, which %s does not document", referenceDoc)
	require.Empty(t, undocumented, "the file accepts these keys, which %s does not document", referenceDoc)
	require.Empty(t, unknown, "%s documents these keys, which the file does not have", referenceDoc)
}

// isBlock reports whether key k holds keys of its own (worker,
// roles.<role>.exec): its keys are documented, it need not be.
func isBlock(k string, keys map[string]bool) bool {
	for other := range keys {
		if strings.HasPrefix(other, k+".") {
			return true
		}
	}
	return false
}

// docKeys reads the keys of the doc's key tables, normalised by normKey.
func docKeys(t *testing.T, doc []byte) map[string]bool {
	t.Helper()
	keys := map[string]bool{}
	inTable := false
	cell := regexp.MustCompile("^`([^`]+)`$")
	sc := bufio.NewScanner(bytes.NewReader(doc))
	for line := 1; sc.Scan(); line++ {
		text := sc.Text()
		if !strings.HasPrefix(text, "|") {
			inTable = false
			continue
		}
		cells := strings.Split(strings.Trim(text, "|"), "|")
		first := strings.TrimSpace(cells[0])
		switch {
		case first == "key":
			inTable = true
		case !inTable || strings.HasPrefix(first, "-"):
		default:
			m := cell.FindStringSubmatch(first)
			require.NotNil(t, m, "%s:%d: a key table's first cell is one key in backticks, not %q", referenceDoc, line, first)
			k := normKey(m[1])
			require.NotContains(t, keys, k, "%s:%d: %s is documented twice", referenceDoc, line, m[1])
			keys[k] = true
		}
	}
	require.NoError(t, sc.Err())
	return keys
}

// placeholder is a <name> segment of a documented key.
var placeholder = regexp.MustCompile(`<[^>]+>`)

// normKey writes every map key and every role as "*", so that
// `prices.models.<model>.input` and prices.models.gpt-4o-mini.input, or
// `roles.<role>.timeout` and roles.judge.timeout, are the same key.
func normKey(k string) string {
	k = placeholder.ReplaceAllString(k, "*")
	for _, role := range []string{"planner", "implementer", "judge"} {
		if rest, ok := strings.CutPrefix(k, "roles."+role); ok && (rest == "" || rest[0] == '.') {
			return "roles.*" + rest
		}
	}
	return k
}

// typeKeys adds every key of a value of type t below prefix: a struct's
// fields by their yaml names (inline ones at its own level), a map's
// values' keys under "*", a list's items' keys under "[]".
func typeKeys(t reflect.Type, prefix string, out map[string]bool) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == reflect.TypeFor[time.Duration]():
	case t.Kind() == reflect.Struct:
		for f := range fields(t) {
			out[normKey(prefix+f.name)] = true
			typeKeys(f.Type, prefix+f.name+".", out)
		}
	case t.Kind() == reflect.Map:
		typeKeys(t.Elem(), prefix+"*.", out)
	case t.Kind() == reflect.Slice:
		typeKeys(t.Elem(), strings.TrimSuffix(prefix, ".")+"[].", out)
	}
}

// exampleKeys adds the keys node sets, read as a value of type t.
func exampleKeys(t *testing.T, n *yaml.Node, typ reflect.Type, prefix string, out map[string]bool) {
	t.Helper()
	for typ.Kind() == reflect.Pointer {
		typ = typ.Elem()
	}
	switch {
	case n.Kind == yaml.MappingNode && typ.Kind() == reflect.Struct:
		for i := 0; i+1 < len(n.Content); i += 2 {
			key := n.Content[i].Value
			f, ok := fieldNamed(typ, key)
			require.True(t, ok, "example line %d: %s%s is no field of %s", n.Content[i].Line, prefix, key, typ)
			out[normKey(prefix+key)] = true
			exampleKeys(t, n.Content[i+1], f.Type, prefix+key+".", out)
		}
	case n.Kind == yaml.MappingNode && typ.Kind() == reflect.Map:
		for i := 1; i < len(n.Content); i += 2 {
			exampleKeys(t, n.Content[i], typ.Elem(), prefix+"*.", out)
		}
	case n.Kind == yaml.SequenceNode && typ.Kind() == reflect.Slice:
		for _, item := range n.Content {
			exampleKeys(t, item, typ.Elem(), strings.TrimSuffix(prefix, ".")+"[].", out)
		}
	}
}

// field is a struct field the file sets, with its key.
type field struct {
	reflect.StructField
	name string
}

// fields yields the fields of struct t the file sets, those of inline
// fields in their place, with their keys.
func fields(t reflect.Type) iter.Seq[field] {
	return func(yield func(field) bool) {
		for i := range t.NumField() {
			f := t.Field(i)
			tag := f.Tag.Get("yaml")
			name, opts, _ := strings.Cut(tag, ",")
			switch {
			case !f.IsExported() || name == "-":
			case slices.Contains(strings.Split(opts, ","), "inline"):
				for inner := range fields(f.Type) {
					if !yield(inner) {
						return
					}
				}
			default:
				if name == "" {
					name = strings.ToLower(f.Name)
				}
				if !yield(field{f, name}) {
					return
				}
			}
		}
	}
}

// fieldNamed finds the field of t, inline ones included, whose key is key.
func fieldNamed(t reflect.Type, key string) (reflect.StructField, bool) {
	for f := range fields(t) {
		if f.name == key {
			return f.StructField, true
		}
	}
	return reflect.StructField{}, false
}

func sortedKeys(m map[string]bool) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// TestConfigReadmeTourIsValid parses every yaml block of the README (the
// tour's configuration), so the tour never shows a file Drover refuses.
func TestConfigReadmeTourIsValid(t *testing.T) {
	t.Parallel()
	readme, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	require.NoError(t, err)
	blocks := strings.Split(string(readme), "```yaml\n")[1:]
	require.NotEmpty(t, blocks, "the README's tour has a configuration")
	for _, block := range blocks {
		text, _, ok := strings.Cut(block, "```")
		require.True(t, ok, "unterminated yaml block")
		f, err := Parse([]byte(text))
		require.NoError(t, err, text)
		_, err = f.Runners(nil, runner.NewSim(runner.SimOptions{}))
		require.NoError(t, err, text)
		require.NotEmpty(t, f.Workspace.Repo, "the tour runs with workspaces on")
	}
}
