package workspace

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// A worktree is tied to the mirror by three small files: the worktree's
// .git ("gitdir: <admin dir>"), and the admin dir's commondir and gitdir.
// Drover's own git never reads them (gitCall names the git dir, the common
// dir and the work tree), but the agent's git does, and `git worktree`
// reads gitdir; Drover writes them when it adds a worktree and a worktree
// whose links changed is not recorded nor reused.

// links are the three files' paths and the contents Drover wrote.
func (m *Manager) links(dir string) [3][2]string {
	admin := m.git.adminDir(dir)
	return [3][2]string{
		{filepath.Join(dir, ".git"), "gitdir: " + admin + "\n"},
		{filepath.Join(admin, "commondir"), "../..\n"},
		{filepath.Join(admin, "gitdir"), filepath.Join(dir, ".git") + "\n"},
	}
}

// writeLinks writes the link files of a worktree git has just added.
func (m *Manager) writeLinks(dir string) error {
	admin := m.git.adminDir(dir)
	if fi, err := os.Lstat(filepath.Join(admin, "HEAD")); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("workspace: worktree add did not make the admin directory %s", filepath.Base(admin))
	}
	for _, l := range m.links(dir) {
		if err := os.WriteFile(l[0], []byte(l[1]), 0o644); err != nil {
			return fmt.Errorf("workspace: worktree links: %w", err)
		}
	}
	return nil
}

// checkLinks returns ErrWorkspaceBroken naming the first link file that is
// not the regular file Drover wrote, and the worktree directory itself
// when it is no longer a directory (a symbolic link included).
func (m *Manager) checkLinks(dir string) error {
	if fi, err := os.Lstat(dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: the worktree directory %s was removed or replaced", ErrWorkspaceBroken, filepath.Base(dir))
	}
	for i, l := range m.links(dir) {
		what := [...]string{"the worktree's .git file", "its admin directory's commondir file", "its admin directory's gitdir file"}[i]
		fi, err := os.Lstat(l[0])
		if err != nil || !fi.Mode().IsRegular() || fi.Size() != int64(len(l[1])) {
			return fmt.Errorf("%w: %s was removed or replaced (Drover wrote it and it must stay as written)", ErrWorkspaceBroken, what)
		}
		b, err := os.ReadFile(l[0])
		if err != nil || string(b) != l[1] {
			return fmt.Errorf("%w: %s was changed (Drover wrote it and it must stay as written)", ErrWorkspaceBroken, what)
		}
	}
	return nil
}

// scrubAdmin removes the configuration files an agent may have left in a
// worktree's admin directory before the worktree is reused (git never
// reads them for Drover, but the next task's agent would) and empties its
// private object store: the next task starts with none of the last one's
// objects (those its recorded heads need are in the mirror).
func (m *Manager) scrubAdmin(dir string) error {
	admin := m.git.adminDir(dir)
	for _, f := range []string{"config", "config.worktree"} {
		_ = os.Remove(filepath.Join(admin, f))
	}
	return m.freshObjects(dir)
}

// freshObjects makes the worktree's private object store, empty.
func (m *Manager) freshObjects(dir string) error {
	objects := m.git.objectsDir(dir)
	if err := os.RemoveAll(objects); err != nil {
		return fmt.Errorf("workspace: private object store: %w", err)
	}
	if err := os.Mkdir(objects, 0o755); err != nil {
		return fmt.Errorf("workspace: private object store: %w", err)
	}
	return nil
}

// addWorktree adds the worktree dir at commit, detached, with its admin
// directory named after dir's base name (a stale one of an earlier run is
// removed first) and its links as Drover writes them. On failure nothing
// is left.
func (m *Manager) addWorktree(ctx context.Context, dir, commit string) error {
	m.wtLock.Lock()
	err := os.RemoveAll(m.git.adminDir(dir))
	if err == nil {
		// -f twice: a path another admin directory claims (an agent can
		// write its own admin directory's gitdir) is taken back.
		_, err = m.git.out(ctx, "", "--git-dir", m.mirror, "worktree", "add", "-q", "-f", "-f", "--detach", "--no-checkout", dir, commit)
	}
	if err == nil {
		err = m.writeLinks(dir)
	}
	if err == nil {
		err = m.freshObjects(dir)
	}
	m.wtLock.Unlock()
	if err == nil {
		_, err = m.git.out(ctx, dir, "reset", "-q", "--hard", "--no-recurse-submodules")
	}
	if err != nil {
		m.remove(ctx, dir)
		return fmt.Errorf("workspace: worktree add: %w", err)
	}
	return nil
}

// homeDir is the private HOME of the processes run in the worktree dir.
func (m *Manager) homeDir(dir string) string {
	return filepath.Join(m.cfg.Dir, "homes", filepath.Base(dir))
}

// resetHome empties the private HOME of the worktree dir, so nothing the
// last task that used the slot left there reaches the next one.
func (m *Manager) resetHome(dir string) error {
	home := m.homeDir(dir)
	if err := os.RemoveAll(home); err != nil {
		return fmt.Errorf("workspace: home: %w", err)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return fmt.Errorf("workspace: home: %w", err)
	}
	return nil
}

// checkTree refuses a tree that adds a gitlink (a nested repository or
// submodule entry, mode 160000) at a path where base has none: Drover would
// record a pointer into a repository nobody has, and git would descend into
// it later. It also refuses a path git itself never writes (a ".git"
// component, "." or "..", an empty one), which only an index an agent
// forged can hold.
func (m *Manager) checkTree(ctx context.Context, base, tree string) error {
	return m.checkRaw(ctx, "diff-tree", "-r", "-z", "--no-renames", base, tree)
}

// checkRaw runs a git command printing raw diff records (-z) and applies
// checkTree's rules to every record.
func (m *Manager) checkRaw(ctx context.Context, args ...string) error {
	raw, err := m.git.run(ctx, gitCall{args: append([]string{"--git-dir", m.mirror}, args...), limit: 16 << 20})
	if err == errOutputLimit {
		return fmt.Errorf("%w: the list of changed paths is over 16 MiB", ErrChangeTooLarge)
	}
	if err != nil {
		return fmt.Errorf("workspace: %s: %w", args[0], err)
	}
	recs := bytes.Split(raw, []byte{0})
	for i := 0; i+1 < len(recs); i++ {
		f := strings.Fields(string(recs[i]))
		if len(f) != 5 || !strings.HasPrefix(f[0], ":") {
			continue
		}
		i++
		path := string(recs[i])
		if f[1] == "160000" && f[0] != ":160000" {
			return gitlinkError(path)
		}
		for _, c := range strings.Split(path, "/") {
			if c == "" || c == "." || c == ".." || strings.EqualFold(c, ".git") {
				return refused("a tree holds the path %.200q, which git never writes", path)
			}
		}
	}
	return nil
}

func gitlinkError(path string) error {
	return refused("%.200q is a nested git repository (a gitlink the base does not have); Drover records files, not repositories", path)
}

// droverLine is a Drover- trailer line: a line an agent's own commit
// message may not hold.
var droverLine = regexp.MustCompile(`(?im)^[ \t]*drover-[a-z0-9-]*[ \t]*:`)

// checkAgentCommits refuses the agent's own commits (from..to) when one of
// their messages holds a Drover- trailer line (the trailers are Drover's
// alone, and other parts of Drover read them) or one of them adds what
// checkTree refuses. It returns how many commits there are and their log
// (each one's author and committer, then its message), which the secret
// scan reads.
func (m *Manager) checkAgentCommits(ctx context.Context, from, to string) (int, string, error) {
	out, err := m.git.run(ctx, gitCall{args: []string{"--git-dir", m.mirror, "log", "-z", "--format=%H%n%an <%ae> %cn <%ce>%n%B", from + ".." + to}, limit: 16 << 20})
	if err == errOutputLimit {
		return 0, "", fmt.Errorf("%w: the agent's commit messages hold more than 16 MiB", ErrChangeTooLarge)
	}
	if err != nil {
		return 0, "", fmt.Errorf("workspace: log: %w", err)
	}
	var log strings.Builder
	n := 0
	for _, rec := range bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0}) {
		sha, rest, _ := bytes.Cut(rec, []byte{'\n'})
		who, msg, _ := bytes.Cut(rest, []byte{'\n'})
		if loc := droverLine.FindIndex(msg); loc != nil {
			return 0, "", refused("the agent's commit %.12s has a %.80q line in its message; Drover- trailers are Drover's alone",
				sha, strings.TrimSpace(string(msg[loc[0]:loc[1]])))
		}
		n++
		log.Write(who)
		log.WriteByte('\n')
		log.Write(msg)
		log.WriteByte('\n')
	}
	// Each of the agent's commits goes to the remote with the branch: none
	// may add a gitlink or a path git never writes, even one a later
	// commit takes away (-m: a merge against each parent).
	if err := m.checkRaw(ctx, "log", "-m", "-r", "--raw", "-z", "--no-renames", "--no-abbrev", "--format=", from+".."+to); err != nil {
		return 0, "", err
	}
	return n, log.String(), nil
}
