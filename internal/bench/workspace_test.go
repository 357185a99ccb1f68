package bench

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/workspace"
)

// git runs git in dir with a clean environment and returns its output.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@localhost", "GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@localhost"}
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "git %v: %s", args, out)
	return string(out)
}

// The workspace phase times each step of every task on the operator's
// repository, measures its size, and pushes nothing: the repository's refs
// are as they were.
func TestRunWorkspace(t *testing.T) {
	if testing.Short() {
		t.Skip("runs git: not run with -short")
	}
	root := t.TempDir()
	src, remote := filepath.Join(root, "src"), filepath.Join(root, "remote.git")
	require.NoError(t, os.MkdirAll(filepath.Join(src, "a"), 0o755))
	for name, body := range map[string]string{"README.md": "# test\n", "a/one.txt": "one\n", "a/two.txt": "two two\n"} {
		require.NoError(t, os.WriteFile(filepath.Join(src, name), []byte(body), 0o644))
	}
	git(t, src, "init", "-q", "-b", "main")
	git(t, src, "add", "-A")
	git(t, src, "commit", "-q", "-m", "initial")
	git(t, root, "clone", "-q", "--bare", src, remote)
	refs := git(t, remote, "for-each-ref")

	cfg, err := Config{Timeout: 2 * time.Minute, Log: natstest.Quiet(), WorkspaceTasks: 4, Workspace: workspace.Config{Repo: remote}}.withDefaults()
	require.NoError(t, err)
	ws, err := runWorkspace(context.Background(), cfg)
	require.NoError(t, err)
	require.Equal(t, 4, ws.Tasks)
	require.Equal(t, 3, ws.Files)
	require.Equal(t, int64(len("# test\n")+len("one\n")+len("two two\n")), ws.Bytes)
	require.Positive(t, ws.MirrorStart)
	require.Positive(t, ws.FirstOpen)
	for name, d := range map[string]Dist{"open": ws.Open, "commit": ws.Commit, "release": ws.Release, "total": ws.Total} {
		require.Equal(t, 4, d.N, name)
		require.Positive(t, d.P50, name)
		require.GreaterOrEqual(t, d.P99, d.P50, name)
	}
	require.GreaterOrEqual(t, ws.Total.P50, ws.Commit.P50)
	require.Equal(t, refs, git(t, remote, "for-each-ref"), "the phase pushed to the repository")

	var out bytes.Buffer
	writeWorkspace(&out, ws)
	for _, want := range []string{"4 tasks", "3 files", "first clone", "open ", "commit and record", "release ", "total per task"} {
		require.Contains(t, out.String(), want)
	}
}

// A repository that cannot be fetched fails the phase with an error that
// names it without the credentials of its URL.
func TestRunWorkspaceMasksTheURLsCredentials(t *testing.T) {
	if testing.Short() {
		t.Skip("runs git: not run with -short")
	}
	cfg, err := Config{Timeout: time.Minute, Log: natstest.Quiet(), Workspace: workspace.Config{Repo: "http://bench:s3cret-token@127.0.0.1:1/none.git"}}.withDefaults()
	require.NoError(t, err)
	_, err = runWorkspace(context.Background(), cfg)
	require.Error(t, err)
	require.Contains(t, err.Error(), "bench: workspace: fetch http://bench:")
	require.NotContains(t, err.Error(), "s3cret-token")
}
