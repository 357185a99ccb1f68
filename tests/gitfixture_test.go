package tests

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// gitEnv is the environment of every git command the tests run: no system
// or user configuration, no prompt, a fixed identity.
func gitEnv(home string) []string {
	return append(os.Environ(),
		"GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+home, "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=fixture", "GIT_AUTHOR_EMAIL=fixture@example.invalid",
		"GIT_COMMITTER_NAME=fixture", "GIT_COMMITTER_EMAIL=fixture@example.invalid")
}

// gitIn runs git in dir and returns its trimmed stdout; it fails the test
// on error.
func gitIn(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitTry(dir, args...)
	require.NoError(t, err)
	return out
}

// gitTry is gitIn without a test to fail.
func gitTry(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = gitEnv(dir)
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// gitRemote is a local bare repository the workspaces use as their remote.
// It logs every ref update in its reflogs (core.logAllRefUpdates=always)
// and every push (one line per git push, from a post-receive hook), so the
// tests count pushes and writers per branch.
type gitRemote struct {
	t    *testing.T
	dir  string // the bare repository
	log  string // the post-receive hook's log: one line per push
	base string // the commit of main
}

// fixtureFiles are the files of the remote's first commit.
var fixtureFiles = map[string]string{
	"README.md":  "# fixture\n",
	"shared.txt": "a file every task appends to\n",
	"doomed.txt": "a file one agent deletes\n",
	"src/a.go":   "package src\n",
}

// newGitRemote makes the bare remote with one commit on main.
func newGitRemote(t *testing.T) *gitRemote {
	t.Helper()
	root := t.TempDir()
	r := &gitRemote{t: t, dir: filepath.Join(root, "remote.git"), log: filepath.Join(root, "pushes.log")}
	gitIn(t, root, "init", "-q", "--bare", "-b", "main", r.dir)
	gitIn(t, r.dir, "config", "core.logAllRefUpdates", "always")
	r.hook("post-receive", fmt.Sprintf("#!/bin/sh\nrefs=$(awk '{print $3}' | tr '\\n' ' ')\necho \"push $refs\" >>%q\n", r.log))

	seed := filepath.Join(root, "seed")
	gitIn(t, root, "init", "-q", "-b", "main", seed)
	for name, body := range fixtureFiles {
		p := filepath.Join(seed, name)
		require.NoError(t, os.MkdirAll(filepath.Dir(p), 0o755))
		require.NoError(t, os.WriteFile(p, []byte(body), 0o644))
	}
	gitIn(t, seed, "add", "-A")
	gitIn(t, seed, "commit", "-q", "-m", "fixture")
	gitIn(t, seed, "push", "-q", r.dir, "main")
	r.base = gitIn(t, r.dir, "rev-parse", "refs/heads/main")
	require.NoError(t, os.Remove(r.log)) // the seed's push is not counted
	return r
}

// hook installs an executable hook script in the remote.
func (r *gitRemote) hook(name, script string) {
	r.t.Helper()
	p := filepath.Join(r.dir, "hooks", name)
	require.NoError(r.t, os.WriteFile(p, []byte(script), 0o755))
}

// pushes returns the pushes the remote received, one line each: "push"
// and the refs it updated.
func (r *gitRemote) pushes() []string {
	r.t.Helper()
	b, err := os.ReadFile(r.log)
	if os.IsNotExist(err) {
		return nil
	}
	require.NoError(r.t, err)
	return strings.Split(strings.TrimSpace(string(b)), "\n")
}

// pushCount is how many pushes the remote received (0 when none).
func (r *gitRemote) pushCount() int {
	b, err := os.ReadFile(r.log)
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "\n")
}

// branches lists the remote's branches under prefix (e.g. "drover/").
func (r *gitRemote) branches(prefix string) []string {
	r.t.Helper()
	out := gitIn(r.t, r.dir, "for-each-ref", "--format=%(refname:lstrip=2)", "refs/heads/"+prefix)
	if out == "" {
		return nil
	}
	return strings.Split(out, "\n")
}

// reflog returns the new values of a branch's updates on the remote,
// oldest first: one entry per write.
func (r *gitRemote) reflog(branch string) []string {
	r.t.Helper()
	b, err := os.ReadFile(filepath.Join(r.dir, "logs", "refs", "heads", filepath.FromSlash(branch)))
	require.NoError(r.t, err, "the remote has no reflog of %s", branch)
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		if f := strings.Fields(line); len(f) > 1 {
			out = append(out, f[1])
		}
	}
	return out
}

// rev resolves a revision in the remote.
func (r *gitRemote) rev(rev string) string { r.t.Helper(); return gitIn(r.t, r.dir, "rev-parse", rev) }

// tree is the tree hash of a branch's head in the remote.
func (r *gitRemote) tree(branch string) string { return r.rev("refs/heads/" + branch + "^{tree}") }

// changed lists the files that differ between the base and a branch.
func (r *gitRemote) changed(branch string) []string {
	r.t.Helper()
	out := gitIn(r.t, r.dir, "diff", "--name-only", r.base, "refs/heads/"+branch)
	if out == "" {
		return nil
	}
	names := strings.Split(out, "\n")
	sort.Strings(names)
	return names
}

// clone makes a fresh clone of the remote at the base commit and returns
// its directory.
func (r *gitRemote) clone() string {
	r.t.Helper()
	dir := filepath.Join(r.t.TempDir(), "clone")
	gitIn(r.t, filepath.Dir(dir), "clone", "-q", r.dir, dir)
	gitIn(r.t, dir, "checkout", "-q", "--detach", r.base)
	return dir
}
