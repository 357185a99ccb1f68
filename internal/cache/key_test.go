package cache

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// TestKeyWorkspaceBase checks the hook for workspaces: the base commit a
// role runs on is part of its key, so the same prompt against another tree
// is never served that tree's answer, and no workspace leaves the key as it
// was.
func TestKeyWorkspaceBase(t *testing.T) {
	t.Parallel()
	req := runner.Request{Role: subjects.RoleImplementer, Task: subjects.TaskRequest{ID: "T1", Workflow: "w", Scope: "s"}, Attempt: 1}
	withBase := func(base string) string {
		r := req
		r.WorkspaceBase = base
		return Key("exec/v1:x", r)
	}
	keys := map[string]string{}
	for _, base := range []string{"", "4b825dc642cb6eb9a060e54bf8d69288fbee4904", "9f2c1e0d7a6b5c4d3e2f1a0b9c8d7e6f5a4b3c2d"} {
		k := withBase(base)
		require.NotContains(t, keys, k, "base %q gives the key of base %q", base, keys[k])
		keys[k] = base
		require.Equal(t, k, withBase(base), "stable")
	}
	require.Equal(t, "implementer.27df259e53432dd0311071fd740b91cbd609ff47ee9928472b0575bf53da27fd", withBase(""), "no workspace: the key of a cache written before workspaces")
}

// A task's budgets limit its spend, not its roles' answers: they stay out
// of the key, so raising a budget keeps the cached results.
func TestKeyLeavesBudgetsOut(t *testing.T) {
	t.Parallel()
	req := runner.Request{Role: subjects.RoleJudge, Task: subjects.TaskRequest{ID: "T1", Workflow: "w", Scope: "s",
		Metadata: map[string]json.RawMessage{"team": json.RawMessage(`"a"`)}}, Attempt: 1}
	plain := Key("sim/v1", req)
	req.Task.Metadata = map[string]json.RawMessage{"team": json.RawMessage(`"a"`),
		ledger.MetaTaskBudget: json.RawMessage(`2.5`), ledger.MetaWorkflowBudget: json.RawMessage(`100`)}
	require.Equal(t, plain, Key("sim/v1", req))
	req.Task.Metadata["team"] = json.RawMessage(`"b"`)
	require.NotEqual(t, plain, Key("sim/v1", req), "other metadata stays in")
}

// TestKeyWorkspacePatch checks that the patch a role starts from (the
// previous attempt's) or judges is part of its key, that the workspace's
// directory is not (it differs per worker), and that no patch leaves the
// key as it was.
func TestKeyWorkspacePatch(t *testing.T) {
	t.Parallel()
	base := "4b825dc642cb6eb9a060e54bf8d69288fbee4904"
	req := runner.Request{Role: subjects.RoleImplementer, Task: subjects.TaskRequest{ID: "T1", Workflow: "w", Scope: "s"}, Attempt: 2, WorkspaceBase: base}
	for _, tc := range []struct {
		name       string
		a, b       func(r *runner.Request)
		sameAsBase bool
	}{
		{name: "patch differs", a: func(r *runner.Request) { r.WorkspacePatch = subjects.PatchDigest([]byte("a")) }, b: func(r *runner.Request) { r.WorkspacePatch = subjects.PatchDigest([]byte("b")) }},
		{name: "patch or none", a: func(r *runner.Request) { r.WorkspacePatch = subjects.PatchDigest([]byte("a")) }, b: func(*runner.Request) {}},
		{name: "dir is not in the key", a: func(r *runner.Request) { r.Workspace = &runner.Workspace{Dir: "/a"} }, b: func(r *runner.Request) { r.Workspace = &runner.Workspace{Dir: "/b"} }, sameAsBase: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ra, rb := req, req
			tc.a(&ra)
			tc.b(&rb)
			ka, kb := Key("exec/v1:x", ra), Key("exec/v1:x", rb)
			if tc.sameAsBase {
				require.Equal(t, ka, kb)
				require.Equal(t, Key("exec/v1:x", req), ka)
				return
			}
			require.NotEqual(t, ka, kb)
		})
	}
}

// compactSeeds are plan and change bodies with and without white space
// outside their strings, escaped quotes and backslashes, and not JSON.
var compactSeeds = []string{
	``, `{}`, `{"plan":"read the file, then fix it"}`, `{"a": 1}`, "{\n\t\"a\" :\r\n [1, 2]\n}",
	`{"q":"say \"hi there\"","b":"a\\"}`, `{"q":"say \"hi\" ", "n": 1}`, `{"a":"x\\\" y"}`, `not json at all`, `{"a": }`, `"  "`,
}

// TestCompactIsJSONCompact checks compact against json.Compact: the same
// bytes for JSON, raw as it is for anything else.
func TestCompactIsJSONCompact(t *testing.T) {
	t.Parallel()
	for _, raw := range compactSeeds {
		t.Run(raw, func(t *testing.T) { requireCompact(t, []byte(raw)) })
	}
}

func FuzzCompact(f *testing.F) {
	for _, raw := range compactSeeds {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { requireCompact(t, raw) })
}

func requireCompact(t *testing.T, raw []byte) {
	t.Helper()
	want := raw
	var buf bytes.Buffer
	if json.Compact(&buf, raw) == nil {
		want = buf.Bytes()
	}
	require.Equal(t, string(want), string(compact(raw)))
}

// TestKeyIsStable pins the keys of requests that use every field the key
// reads: a change to how the key is computed must not move any cached
// result out of reach.
func TestKeyIsStable(t *testing.T) {
	t.Parallel()
	full := runner.Request{
		Role: subjects.RoleJudge,
		Task: subjects.TaskRequest{ID: "T9", Workflow: "w", Scope: "fix the <parser>", Verification: "go test ./...", Type: "bugfix",
			Metadata: map[string]json.RawMessage{"b": json.RawMessage(`{ "x": [1, 2] }`), "a": json.RawMessage(`"v"`), "board_line": json.RawMessage(`12`)}},
		Attempt: 2, Plan: json.RawMessage(`{"steps": ["a"]}`), Change: json.RawMessage(`{"diff":"+x"}`), Feedback: "too slow",
		Lessons: []string{"one", "two"}, WorkspaceBase: "4b825dc642cb6eb9a060e54bf8d69288fbee4904", WorkspacePatch: "ab12",
	}
	for _, tc := range []struct {
		name string
		req  runner.Request
		want string
	}{
		{"every field", full, "judge.6825cf980813ae8a2964f4183c6d19c5b964af7d45b2d6f43e94352b63e323f4"},
		{"a planner with no metadata", runner.Request{Role: subjects.RolePlanner, Task: subjects.TaskRequest{ID: "t1", Scope: "s"}, Attempt: 1}, "planner.82f5e07a519bbd3de70491f693c351aa33efdea3af04587f0bf218841c2301f2"},
	} {
		require.Equal(t, tc.want, Key("sim/v1", tc.req), tc.name)
	}
}

func BenchmarkKey(b *testing.B) {
	req := runner.Request{Role: subjects.RoleImplementer, Task: subjects.TaskRequest{ID: "t17", Workflow: "bench", Scope: "bench wf task 17", Verification: "the sim approves", Type: "default"},
		Attempt: 1, Plan: json.RawMessage(`{"steps":["read the scope","change the code","run the verification"]}`)}
	for b.Loop() {
		_ = Key("sim/v1", req)
	}
}
