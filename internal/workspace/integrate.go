package workspace

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Errors of the merge queue's git operations.
var (
	// ErrConflict is a merge or rebase that stopped on a conflict; the
	// error's text holds git's report (bounded).
	ErrConflict = errors.New("workspace: conflict")
	// ErrTargetMoved is a push of a target refused because the target is no
	// longer at the commit the batch was built on.
	ErrTargetMoved = errors.New("workspace: target moved")
)

// TargetHead fetches the remote and returns the commit its branch target
// points at.
func (m *Manager) TargetHead(ctx context.Context, target string) (string, error) {
	if err := m.fetch(ctx); err != nil {
		return "", err
	}
	return m.git.out(ctx, "", "--git-dir", m.mirror, "rev-parse", "-q", "--verify", "--end-of-options", "refs/remotes/origin/"+target+"^{commit}")
}

// PushTarget moves the remote's branch target from old to commit with one
// non-forced push guarded by a lease on old. A refusal because the target
// moved is ErrTargetMoved.
func (m *Manager) PushTarget(ctx context.Context, target, old, commit string) error {
	ref := "refs/heads/" + target
	m.pushes.Add(1)
	out, err := m.git.run(ctx, gitCall{args: []string{"--git-dir", m.mirror, "push", "--porcelain", "--no-verify",
		"--force-with-lease=" + ref + ":" + old, "--end-of-options", m.cfg.PushRemote, commit + ":" + ref}, limit: 1 << 20})
	st, ok := parsePorcelain(string(out))[ref]
	switch {
	case ok && st.flag != '!':
		m.pushedRefs.Add(1)
		return nil
	case ok && (strings.Contains(st.summary, "stale") || strings.Contains(st.summary, "fetch first") || strings.Contains(st.summary, "non-fast-forward")):
		return fmt.Errorf("%w: %s: %s", ErrTargetMoved, target, st.summary)
	case ok:
		return fmt.Errorf("%w: %s: %s", ErrPushRejected, target, st.summary)
	case err != nil:
		return fmt.Errorf("workspace: push %s: %w", target, err)
	}
	return fmt.Errorf("workspace: push %s: the remote did not answer for the ref", target)
}

// Scratch is a detached worktree of the mirror where a merger builds a
// batch. It is not safe for concurrent use; Close removes it.
type Scratch struct {
	m   *Manager
	dir string
}

// Scratch adds a detached worktree at commit.
func (m *Manager) Scratch(ctx context.Context, commit string) (*Scratch, error) {
	m.mu.Lock()
	m.nextID++
	dir := filepath.Join(m.wtRoot, "merge"+strconv.Itoa(m.nextID))
	m.mu.Unlock()
	if err := m.addWorktree(ctx, dir, commit); err != nil {
		return nil, fmt.Errorf("workspace: scratch: %w", err)
	}
	return &Scratch{m: m, dir: dir}, nil
}

// Dir is the scratch worktree's directory.
func (s *Scratch) Dir() string { return s.dir }

// Reset checks commit out, discarding everything else. HEAD is detached
// first, so a HEAD the check left pointing at a ref never moves that ref.
func (s *Scratch) Reset(ctx context.Context, commit string) error {
	if _, err := s.m.git.out(ctx, s.dir, "update-ref", "--no-deref", "HEAD", commit); err != nil {
		return fmt.Errorf("workspace: scratch reset: %w", err)
	}
	if _, err := s.m.git.out(ctx, s.dir, "reset", "-q", "--hard", "--no-recurse-submodules"); err != nil {
		return fmt.Errorf("workspace: scratch reset: %w", err)
	}
	_, err := s.m.git.out(ctx, s.dir, "clean", "-q", "-ffdx")
	return err
}

// Head is the commit checked out.
func (s *Scratch) Head(ctx context.Context) (string, error) {
	return s.m.git.out(ctx, s.dir, "rev-parse", "HEAD")
}

// Merge merges head into the checked-out commit with a merge commit whose
// message is msg plus MergeTrailer (rebase false), or replays head's own commits on top of it
// (rebase true), and returns the new commit. A conflict is ErrConflict
// holding git's report; the worktree is left at its previous commit.
func (s *Scratch) Merge(ctx context.Context, head, msg string, rebase bool) (string, error) {
	prev, err := s.Head(ctx)
	if err != nil {
		return "", err
	}
	if err := s.m.haveCommit(ctx, head); err != nil {
		return "", err
	}
	var out []byte
	if rebase {
		base, err2 := s.m.git.out(ctx, s.dir, "merge-base", prev, head)
		if err2 != nil {
			return "", fmt.Errorf("workspace: merge-base: %w", err2)
		}
		out, err = s.m.git.run(ctx, gitCall{dir: s.dir, args: []string{"cherry-pick", "--allow-empty", "--keep-redundant-commits", base + ".." + head}, limit: 1 << 16})
		if err != nil {
			_, _ = s.m.git.out(ctx, s.dir, "cherry-pick", "--abort")
		} else if err = s.markRebased(ctx, head); err != nil {
			return "", fmt.Errorf("workspace: rebase: %w", err)
		}
	} else {
		out, err = s.m.git.run(ctx, gitCall{dir: s.dir, args: []string{"merge", "-q", "--no-ff", "--no-edit", "-m", msg + "\n\n" + MergeTrailer + ": " + head, head}, limit: 1 << 16})
		if err != nil {
			_, _ = s.m.git.out(ctx, s.dir, "merge", "--abort")
		}
	}
	if err != nil {
		if rerr := s.Reset(ctx, prev); rerr != nil {
			return "", rerr
		}
		var ge *gitError
		if errors.As(err, &ge) {
			return "", fmt.Errorf("%w: %s\n%s", ErrConflict, strings.TrimSpace(string(out)), ge.stderr)
		}
		return "", err
	}
	return s.Head(ctx)
}

// Run runs c in the scratch worktree (no shell, its timeout); the error
// holds the tail of its output. The scratch's private object store is
// emptied afterwards: Drover's next merges there read it as an alternate
// and would take an object the check planted for one they write.
func (s *Scratch) Run(ctx context.Context, c Command) error {
	err := s.m.runCommand(ctx, s.SandboxPaths(), c, []string{"DROVER_WORKSPACE=" + s.dir})
	if ferr := s.m.freshObjects(s.dir); ferr != nil {
		return errors.Join(err, fmt.Errorf("workspace: scratch: %w", ferr))
	}
	return err
}

// Close removes the scratch worktree.
func (s *Scratch) Close(ctx context.Context) {
	s.m.remove(context.WithoutCancel(ctx), s.dir)
	_ = os.Remove(s.dir)
}

// MergeTrailer is the trailer naming, in the commit that brought a task's
// branch onto a target, the branch head it brought.
const MergeTrailer = "Drover-Merge-Head"

// Merged reports whether tip already holds head: head is an ancestor of
// tip. It never reads commit messages: an agent writes its own, so a
// MergeTrailer in tip's history proves nothing (the merge queue keeps its
// own record of the commits a rebase made, in its merge log).
func (m *Manager) Merged(ctx context.Context, tip, head string) bool {
	return m.descends(ctx, head, tip)
}

// markRebased adds MergeTrailer naming head to the commit checked out.
func (s *Scratch) markRebased(ctx context.Context, head string) error {
	_, err := s.m.git.out(ctx, s.dir, "commit", "-q", "--amend", "--no-edit", "--allow-empty", "--trailer", MergeTrailer+": "+head)
	return err
}

// DeleteBranch deletes the remote's branch if it is still at head (a lease:
// a branch someone moved since is left alone). A branch already gone is
// no error.
func (m *Manager) DeleteBranch(ctx context.Context, branch, head string) error {
	if err := m.refuseProtected(branch); err != nil {
		return err
	}
	ref := "refs/heads/" + branch
	out, err := m.git.run(ctx, gitCall{args: []string{"--git-dir", m.mirror, "push", "--porcelain", "--no-verify",
		"--force-with-lease=" + ref + ":" + head, "--end-of-options", m.cfg.PushRemote, ":" + ref}, limit: 1 << 20})
	if st, ok := parsePorcelain(string(out))[ref]; ok && st.flag != '!' {
		return nil
	} else if ok {
		return fmt.Errorf("%w: delete %s: %s", ErrPushRejected, branch, st.summary)
	}
	if err != nil {
		return fmt.Errorf("workspace: delete %s: %w", branch, err)
	}
	return nil
}
