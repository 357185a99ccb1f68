package workspace

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// testEnv is the clean environment of the tests' own git calls.
func testEnv(home string) []string {
	return []string{
		"PATH=" + os.Getenv("PATH"), "HOME=" + home, "GIT_CONFIG_NOSYSTEM=1", "LC_ALL=C",
		"GIT_AUTHOR_NAME=Test", "GIT_AUTHOR_EMAIL=test@localhost",
		"GIT_COMMITTER_NAME=Test", "GIT_COMMITTER_EMAIL=test@localhost",
		"GIT_TERMINAL_PROMPT=0",
	}
}

// gitT runs git in dir for a test and returns its trimmed stdout. Under
// -short (make test-unit) it skips the test.
func gitT(t testing.TB, dir string, args ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs git: not run with -short")
	}
	out, err := gitTry(dir, args...)
	require.NoError(t, err, "git %v: %s", args, out)
	return out
}

func gitTry(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = testEnv(dir)
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// writeFile writes a file under dir, making its directories.
func writeFile(t testing.TB, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
	require.NoError(t, os.WriteFile(p, []byte(content), 0o644))
}

// testRepo is a bare remote with one commit on main: README, shared.txt,
// a/one.txt, a/two.txt and a binary bin.dat.
type testRepo struct {
	remote string // bare repository, the remote
	base   string // main's commit
}

func newTestRepo(t testing.TB) testRepo {
	t.Helper()
	root := t.TempDir()
	src := filepath.Join(root, "src")
	remote := filepath.Join(root, "remote.git")
	require.NoError(t, os.MkdirAll(src, 0o755))
	gitT(t, src, "init", "-q", "-b", "main")
	writeFile(t, src, "README.md", "# test\n")
	writeFile(t, src, "shared.txt", "line 1\nline 2\nline 3\n")
	writeFile(t, src, "a/one.txt", "one\n")
	writeFile(t, src, "a/two.txt", "two\n")
	writeFile(t, src, "bin.dat", "\x00\x01\x02binary\x00")
	gitT(t, src, "add", "-A")
	gitT(t, src, "commit", "-q", "-m", "initial")
	gitT(t, root, "clone", "-q", "--bare", src, remote)
	gitT(t, remote, "config", "core.logAllRefUpdates", "always")
	return testRepo{remote: remote, base: gitT(t, src, "rev-parse", "HEAD")}
}

// newManager starts a Manager on the repo with its own Dir.
func newManager(t testing.TB, repo string, edit func(*Config)) *Manager {
	t.Helper()
	return newManagerWith(t, repo, Deps{}, edit)
}

// newManagerWith is newManager with deps.
func newManagerWith(t testing.TB, repo string, deps Deps, edit func(*Config)) *Manager {
	t.Helper()
	cfg := Config{Repo: repo, Dir: filepath.Join(t.TempDir(), "ws"), PushDelay: 20 * time.Millisecond, GitTimeout: time.Minute}
	if edit != nil {
		edit(&cfg)
	}
	m, err := New(deps, cfg)
	require.NoError(t, err)
	require.NoError(t, m.Start(context.Background()))
	t.Cleanup(func() { _ = m.Close() })
	return m
}

// openTask opens the workspace of task T<n> of workflow "wf".
func openTask(t testing.TB, m *Manager, base string, task string) *Workspace {
	t.Helper()
	branch, err := m.Branch("wf", task, "")
	require.NoError(t, err)
	w, err := m.Open(context.Background(), Spec{Workflow: "wf", Task: task, Branch: branch, Base: base})
	require.NoError(t, err)
	t.Cleanup(func() { _ = w.Release(context.Background(), false) })
	return w
}

// checkPatch applies the change's patch with `git apply --index` in a fresh
// clone at the base, commits, and requires the branch's tree.
func checkPatch(t testing.TB, remote string, ch Change, wantTree string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	gitT(t, filepath.Dir(dir), "clone", "-q", "--no-checkout", remote, dir)
	gitT(t, dir, "checkout", "-q", ch.Base)
	p := filepath.Join(t.TempDir(), "change.patch")
	require.NoError(t, os.WriteFile(p, ch.Patch, 0o644))
	if len(ch.Patch) > 0 {
		gitT(t, dir, "apply", "--index", p)
	}
	gitT(t, dir, "commit", "-q", "--allow-empty", "-m", "applied")
	require.Equal(t, wantTree, gitT(t, dir, "rev-parse", "HEAD^{tree}"), "the patch does not reproduce the branch's tree")
}

// treeOf returns the tree of a commit in the Manager's mirror.
func treeOf(t testing.TB, m *Manager, commit string) string {
	return gitT(t, m.mirror, "rev-parse", commit+"^{tree}")
}

func fileStat(files []FileStat, path string) (FileStat, error) {
	for _, f := range files {
		if f.Path == path {
			return f, nil
		}
	}
	return FileStat{}, fmt.Errorf("%s not in %+v", path, files)
}
