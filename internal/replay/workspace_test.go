package replay

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// wsTask is a recorded task whose implementer attempts recorded changes
// from base with the given patch digests ("" : an attempt recorded
// without a workspace).
func wsTask(base string, digests ...string) *Task {
	t := &Task{Outputs: map[Step]Output{}}
	for i, d := range digests {
		md := json.RawMessage(`{"recorded_from":"x"}`)
		if d != "" {
			md = json.RawMessage(fmt.Sprintf(`{"workspace":{"branch":"b","base":%q,"head":"h%d","patch":{"blob":"n","truncated":true},"patch_sha256":%q}}`, base, i+1, d))
		}
		t.Outputs[Step{subjects.RoleImplementer, i + 1}] = Output{Output: json.RawMessage(`{}`), Action: "change", Metadata: md}
	}
	return t
}

// The re-run's workspace block: pushing off, branches named from the
// re-run's workflow, the recorded base pinned; tasks from several bases
// are refused.
func TestReplayWorkspaceConfig(t *testing.T) {
	t.Parallel()
	fleet := workspace.Config{Repo: "/r", Dir: "/d", Push: true, PushRemote: "/p", BranchTemplate: "agents/{task}", BaseRef: "main"}
	for _, tc := range []struct {
		name  string
		cfg   workspace.Config
		tasks map[string]*Task
		want  workspace.Config
		errIs error
	}{
		{name: "off stays off", cfg: workspace.Config{Push: true}, tasks: map[string]*Task{"a": wsTask("B1", "d1")}, want: workspace.Config{Push: true}},
		{name: "one base pinned, no push, own branches", cfg: fleet,
			tasks: map[string]*Task{"a": wsTask("B1", "d1", "d2"), "b": wsTask("B1", "d3")},
			want:  workspace.Config{Repo: "/r", Dir: "/d", BranchTemplate: workspace.DefaultBranchTemplate, BaseRef: "B1"}},
		{name: "a template with the workflow is kept", cfg: workspace.Config{Repo: "/r", Dir: "/d", BranchTemplate: "x/{workflow}/{task}"},
			tasks: map[string]*Task{"a": wsTask("B1", "", "d2")},
			want:  workspace.Config{Repo: "/r", Dir: "/d", BranchTemplate: "x/{workflow}/{task}", BaseRef: "B1"}},
		{name: "recorded without workspaces: the configured base", cfg: fleet, tasks: map[string]*Task{"a": wsTask("B1", "")},
			want: workspace.Config{Repo: "/r", Dir: "/d", BranchTemplate: workspace.DefaultBranchTemplate, BaseRef: "main"}},
		{name: "several bases refused", cfg: fleet, tasks: map[string]*Task{"a": wsTask("B1", "d1"), "b": wsTask("B2", "d2")}, errIs: ErrSeveralBases},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			rec := &Record{Tasks: tc.tasks}
			var ids []string
			for id := range tc.tasks {
				ids = append(ids, id)
			}
			got, err := replayWorkspace(context.Background(), tc.cfg, rec, ids, nil)
			require.Equal(t, !strings.HasPrefix(tc.name, "recorded without"), hasChanges(rec, ids))
			if tc.errIs != nil {
				require.ErrorIs(t, err, tc.errIs)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, got)
		})
	}
}

// The recorded runner hands the implementer's recorded change to a
// re-run with a worktree, as a pipeline.RecordedChange, and to no other.
func TestRecordedServesTheRecordedChange(t *testing.T) {
	t.Parallel()
	plan := json.RawMessage(`{"plan":"p"}`)
	task := wsTask("B1", "d1")
	task.Outputs[Step{subjects.RolePlanner, 1}] = Output{Output: plan, Action: "plan"}
	task.Outputs[Step{subjects.RoleJudge, 1}] = Output{Output: json.RawMessage(`{}`), Action: "approve",
		Metadata: json.RawMessage(`{"workspace":{"base":"B1","patch_sha256":"d9"}}`)}
	r := NewRecorded(&Record{Workflow: "w", Tasks: map[string]*Task{"a": task}})
	ws := &runner.Workspace{Dir: "/wt", Branch: "drover/w2/a"}
	for _, tc := range []struct {
		name string
		req  runner.Request
		want string // the change's digest, "" for none
	}{
		{"implementer with a worktree", runner.Request{Role: subjects.RoleImplementer, Attempt: 1, Workspace: ws}, "d1"},
		{"implementer without one", runner.Request{Role: subjects.RoleImplementer, Attempt: 1}, ""},
		{"judge with one", runner.Request{Role: subjects.RoleJudge, Attempt: 1, Workspace: ws, Change: json.RawMessage(`{}`)}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tc.req.Task, tc.req.Plan = subjects.TaskRequest{ID: "a", Workflow: "w2"}, plan
			res, err := r.Run(context.Background(), tc.req)
			require.NoError(t, err)
			v, ok := res.Metadata[audit.MetaWorkspace]
			if tc.want == "" {
				require.False(t, ok, "%v", res.Metadata)
				return
			}
			rc, ok := v.(pipeline.RecordedChange)
			require.True(t, ok, "%T", v)
			require.Contains(t, string(rc), `"patch_sha256":"`+tc.want+`"`)
		})
	}
}

// Each recorded attempt's change is compared by base and patch digest;
// the result's workspace part is left out of the outputs' comparison.
func TestCompareChanges(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		old, nt  *Task
		same     []bool
		allMatch bool
	}{
		{"identical", wsTask("B", "d1", "d2"), wsTask("B", "d1", "d2"), []bool{true, true}, true},
		{"an attempt with another tree", wsTask("B", "d1", "d2"), wsTask("B", "d1", "dX"), []bool{true, false}, false},
		{"another base", wsTask("B", "d1"), wsTask("C", "d1"), []bool{false}, false},
		{"an attempt the re-run did not reach", wsTask("B", "d1", "d2"), wsTask("B", "d1"), []bool{true, false}, false},
		{"recorded without workspaces", wsTask("B", ""), wsTask("B", ""), nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := compareChanges(tc.old, tc.nt)
			require.Equal(t, tc.allMatch, ok)
			var same []bool
			for _, c := range got {
				same = append(same, c.Same)
			}
			require.Equal(t, tc.same, same)
		})
	}
	a := json.RawMessage(`{"attempts":1,"workspace":{"branch":"drover/w/a","head":"h1","pushed":true},"verdict":{}}`)
	b := json.RawMessage(`{"verdict":{},"attempts":1,"workspace":{"branch":"drover/w2/a","head":"h2","pushed":false}}`)
	require.True(t, sameJSON(resultOf(a), resultOf(b)))
	require.False(t, sameJSON(resultOf(a), resultOf(json.RawMessage(`{"attempts":2,"verdict":{}}`))))
}
