//go:build linux

package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/config"
	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// A worker with real NATS, a real git remote and its exec implementer in
// the real sandbox: a hostile agent's attacks on other worktrees, the
// mirror's config, hooks and refs, and its leftover process all fail, and
// every task's branch on the remote holds exactly its own change.
func TestSandboxedAgentsEndToEnd(t *testing.T) {
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bwrap not found and CI is set: install bubblewrap: %v", err)
		}
		t.Skip("bwrap not found: install bubblewrap to run the sandbox tests (they fail under CI)")
	}
	t.Parallel()
	r := newWSRig(t)
	agent, err := filepath.Abs(filepath.Join("testdata", "sandbox_agent.sh"))
	require.NoError(t, err)
	dir := filepath.Join(t.TempDir(), "workspaces")
	leftover := "1000" + strconv.Itoa(int(time.Now().UnixNano()%1e6)) + ".5"
	doc := fmt.Sprintf(`roles:
  planner: {runner: sim}
  implementer: {runner: exec, exec: {argv: [sh, %q], env: {LEFTOVER: %q}, inherit: [PATH]}}
  judge: {runner: sim}
workspace:
  repo: %q
  dir: %q
  push: true
  push_delay: 100ms
`, agent, leftover, r.remote.dir, dir)
	f, err := config.Parse([]byte(doc))
	require.NoError(t, err)
	// The agent's script is shown read-only; the workspaces directory is
	// hidden but for what each task is given.
	sb, err := sandbox.New(sandbox.Config{ReadOnly: []string{filepath.Dir(agent)}, Hide: []string{dir}})
	require.NoError(t, err)
	set, err := f.SandboxedRunners(sb, prompt.Defaults(), runner.NewSim(runner.SimOptions{}))
	require.NoError(t, err)
	r.startWorker(worker.Config{Concurrency: 3, Runners: set, Workspace: f.Workspace})

	ids := []string{"edit-1", "hostile-1", "edit-2"}
	after := r.submit(wsTasks("box", ids...)...)
	got := r.waitTerminal("box", after, len(ids))
	for _, id := range ids {
		res := wsResult(t, got[id])
		require.Equal(t, []string{"tasks/" + id + ".txt"}, r.remote.changed(res.Branch), "%s: exactly its own change", id)
	}
	said := ""
	for _, ev := range r.events("box") {
		if ev.TaskID == "hostile-1" && ev.EventType == subjects.EventImplementerChange {
			said = string(ev.Output) + string(ev.Reasoning)
		}
	}
	require.Contains(t, said, "hostile-1 done")
	require.NotContains(t, said, "wrote", "an attack succeeded")
	require.NotContains(t, said, "moved", "an attack succeeded")
	mirror := filepath.Join(dir, "mirror.git")
	hooks, err := exec.Command("git", "--git-dir", mirror, "config", "core.hooksPath").Output()
	require.NoError(t, err)
	require.NotEqual(t, "/tmp", strings.TrimSpace(string(hooks)))
	require.NoFileExists(t, filepath.Join(mirror, "hooks", "post-commit"))
	require.Equal(t, r.remote.base, gitIn(t, mirror, "rev-parse", "refs/remotes/origin/main"))
	require.Empty(t, procsHolding(t, leftover), "the hostile agent's process outlived its role")
}

// procsHolding lists the PIDs whose command line holds arg.
func procsHolding(t *testing.T, arg string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), arg) {
			out = append(out, e.Name())
		}
	}
	return out
}
