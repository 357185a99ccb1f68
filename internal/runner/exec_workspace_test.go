//go:build unix

package runner

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// whereAmI prints the child's working directory and workspace variables.
const whereAmI = `printf '{"dir":"%s","ws":"%s","branch":"%s","base":"%s"}' "$(pwd -P)" "$DROVER_WORKSPACE" "$DROVER_BRANCH" "$DROVER_BASE_SHA"`

// An exec role in a workspace runs in the worktree and gets its variables;
// one whose config names a dir runs there and still gets them.
func TestExecRunsInTheWorkspace(t *testing.T) {
	t.Parallel()
	wt, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	own, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	ws := &Workspace{Dir: wt, Branch: "drover/wf/T1", Base: "4b825dc642cb6eb9a060e54bf8d69288fbee4904"}
	for _, tc := range []struct {
		name, dir, want string
	}{
		{"no dir: the worktree", "", wt},
		{"a configured dir wins", own, own},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e, err := NewExec(subjects.RoleImplementer, ExecConfig{Argv: []string{"sh", "-c", whereAmI}, Dir: tc.dir}, nil)
			require.NoError(t, err)
			req := simReq(t, subjects.RoleImplementer, "")
			req.Workspace = ws
			res, err := e.Run(context.Background(), req)
			require.NoError(t, err)
			var got map[string]string
			require.NoError(t, json.Unmarshal(res.Output, &got))
			require.Equal(t, map[string]string{"dir": tc.want, "ws": wt, "branch": ws.Branch, "base": ws.Base}, got)
		})
	}
}

// The sim implementer in a workspace writes its task's file and appends to
// the shared one, the same bytes for the same request.
func TestSimEditsTheWorkspace(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := NewSim(SimOptions{})
	req := simReq(t, subjects.RoleImplementer, "")
	req.Workspace = &Workspace{Dir: dir}
	_, err := s.Run(context.Background(), req)
	require.NoError(t, err)
	own, err := os.ReadFile(filepath.Join(dir, SimFile(req.Task.ID)))
	require.NoError(t, err)
	require.Equal(t, "task T1.1\nattempt 1\n\nImplement the audit logger\n", string(own))
	shared, err := os.ReadFile(filepath.Join(dir, SimDir, SimSharedFile))
	require.NoError(t, err)
	require.Equal(t, "T1.1 attempt 1\n", string(shared))

	judge := simReq(t, subjects.RoleJudge, "")
	judge.Workspace = &Workspace{Dir: t.TempDir()}
	_, err = s.Run(context.Background(), judge)
	require.NoError(t, err)
	entries, err := os.ReadDir(judge.Workspace.Dir)
	require.NoError(t, err)
	require.Empty(t, entries, "only the implementer edits")
}

// The sim judge in a workspace judges the diff it is shown: its verdict
// carries the diff stat and names the patch; without a workspace its
// output is as before.
func TestSimJudgeSeesTheDiff(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{})
	req := simReq(t, subjects.RoleJudge, "")
	plain, err := s.Run(context.Background(), req)
	require.NoError(t, err)
	require.NotContains(t, string(plain.Output), `"diff"`)

	req.Workspace = &Workspace{Dir: t.TempDir(), Stat: "A x | +1 -0\n1 files changed, 1 insertions(+), 0 deletions(-)", Patch: "+hello\n", Empty: true}
	res, err := s.Run(context.Background(), req)
	require.NoError(t, err)
	var v struct{ Verdict, Feedback, Diff string }
	require.NoError(t, json.Unmarshal(res.Output, &v))
	require.Equal(t, req.Workspace.Stat, v.Diff)
	require.Contains(t, v.Feedback, "patch "+digest([]byte("+hello\n")))
	require.Contains(t, v.Feedback, "no change since the previous attempt")
}
