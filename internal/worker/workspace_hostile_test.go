package worker_test

import (
	"crypto/rand"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// Bad input and hostile agents get a clear error in the audit stream and
// fail or retry only their own task: a retry where another try can help
// (a removed worktree, a failing setup), role_failed where it cannot (a
// change over the size bound, a branch with other history). An agent that
// changes nothing is recorded as such, and the judge is told.
func TestWorkspaceHostileAgents(t *testing.T) {
	for _, tc := range []struct {
		name  string
		tweak func(*workspace.Config)
		// prepare runs on the remote before the task.
		prepare func(t *testing.T, b *wsBundle)
		edit    func(t *testing.T, req runner.Request)
		// want: the terminal event and its reason; retried: whether a
		// task_retried event names the error; errText: in the error.
		want    subjects.EventType
		reason  subjects.Reason
		retried bool
		errText string
		// errPrefix: how the error starts (the contract: the role, then
		// "workspace:"), when set.
		errPrefix string
		check     func(t *testing.T, b *wsBundle, a *agent)
	}{
		{
			name: "removed worktree, then a good try",
			edit: func(t *testing.T, req runner.Request) {
				if req.Try == 1 {
					require.NoError(t, os.RemoveAll(req.Workspace.Dir))
					return
				}
				editTask(t, req)
			},
			want: subjects.EventTaskCompleted, retried: true, errText: "workspace",
		},
		{
			name:  "huge binary change",
			tweak: func(c *workspace.Config) { c.MaxPatchBytes = 4 << 10 },
			edit: func(t *testing.T, req runner.Request) {
				require.NoError(t, os.WriteFile(filepath.Join(req.Workspace.Dir, "blob.bin"), randomBytes(t, 256<<10), 0o644))
			},
			want: subjects.EventTaskFailed, reason: subjects.ReasonRoleFailed, errText: "too large", errPrefix: "implementer: workspace: ",
		},
		{
			name: "setup fails",
			tweak: func(c *workspace.Config) {
				c.Setup = []workspace.Command{{Argv: []string{"sh", "-c", "echo no deps >&2; exit 3"}, Timeout: 10 * time.Second}}
			},
			edit: editTask,
			want: subjects.EventTaskFailed, reason: subjects.ReasonMaxDeliveries, retried: true, errText: "setup",
			check: func(t *testing.T, _ *wsBundle, a *agent) {
				require.Zero(t, a.implCalls(), "no agent runs without its setup")
			},
		},
		{
			name: "branch exists with other history",
			prepare: func(t *testing.T, b *wsBundle) {
				clone := filepath.Join(t.TempDir(), "c")
				git(t, filepath.Dir(clone), "clone", "-q", b.repo, clone)
				git(t, clone, "checkout", "-q", "--orphan", "other")
				require.NoError(t, os.WriteFile(filepath.Join(clone, "x"), []byte("x\n"), 0o644))
				git(t, clone, "add", "-A")
				git(t, clone, "commit", "-q", "-m", "someone else's")
				git(t, clone, "push", "-q", "origin", "HEAD:refs/heads/drover/wf-hostile/T1")
			},
			edit: editTask,
			want: subjects.EventTaskFailed, reason: subjects.ReasonRoleFailed, errText: "exists",
			errPrefix: "implementer: workspace: open drover/wf-hostile/T1: ",
		},
		{
			name: "changes nothing",
			edit: func(*testing.T, runner.Request) {},
			want: subjects.EventTaskCompleted,
			check: func(t *testing.T, b *wsBundle, a *agent) {
				ch := change(t, b.events(t, "wf-hostile", "T1", subjects.EventImplementerChange)[0])
				require.True(t, ch.Empty)
				require.Empty(t, ch.Files)
				for _, j := range a.judge {
					if j.Task.ID == "T1" {
						require.True(t, j.Workspace.Empty, "the judge is told")
					}
				}
			},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b := newWSBundle(t)
			b.tweak = tc.tweak
			if tc.prepare != nil {
				tc.prepare(t, b)
			}
			a := &agent{t: t, edit: func(t *testing.T, req runner.Request) {
				if req.Task.ID == "T1" {
					tc.edit(t, req)
					return
				}
				editTask(t, req)
			}}
			b.start(t, a.set(), t.TempDir(), true, 5*time.Second)
			term := b.submit(t, "wf-hostile", subjects.TaskRequest{ID: "T1", Scope: "s"}, subjects.TaskRequest{ID: "T2", Scope: "a good one", Branch: "drover/other/T2"})
			require.Equal(t, tc.want, term["T1"].EventType, "%+v", term["T1"])
			require.Equal(t, string(tc.reason), map[bool]string{true: term["T1"].Action, false: ""}[tc.reason != ""])
			if tc.want == subjects.EventTaskFailed {
				require.Contains(t, term["T1"].Error, tc.errText)
				require.True(t, strings.HasPrefix(term["T1"].Error, tc.errPrefix), "the error starts with %q: %s", tc.errPrefix, term["T1"].Error)
				require.NotContains(t, term["T1"].Error, "permanent role error", "an internal phrase")
			}
			retried := b.events(t, "wf-hostile", "T1", subjects.EventTaskRetried)
			if tc.retried {
				require.NotEmpty(t, retried)
				require.Contains(t, retried[0].Error, tc.errText)
			} else {
				require.Empty(t, retried)
			}
			if tc.check != nil {
				tc.check(t, b, a)
			}
			if tc.name != "setup fails" {
				require.Equal(t, subjects.EventTaskCompleted, term["T2"].EventType, "the other task is untouched: %+v", term["T2"])
				git(t, b.repo, "rev-parse", "--verify", "refs/heads/drover/other/T2")
			}
		})
	}
}

func randomBytes(t *testing.T, n int) []byte {
	b := make([]byte, n)
	_, err := rand.Read(b)
	require.NoError(t, err)
	return b
}
