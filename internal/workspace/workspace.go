package workspace

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"sync"
)

// Workspace is one task's worktree, open until Release. Its methods are
// safe for concurrent use but are meant to be called by the task alone.
type Workspace struct {
	m                 *Manager
	dir, branch, base string
	workflow, task    string
	mu                sync.Mutex
	head              string // the last head Drover recorded or checked out
	released          bool
}

// Dir is the worktree's directory: the working directory of the roles.
func (w *Workspace) Dir() string { return w.dir }

// Branch is the task's branch.
func (w *Workspace) Branch() string { return w.branch }

// Base is the pinned base commit.
func (w *Workspace) Base() string { return w.base }

// Head returns the commit the branch points at now.
func (w *Workspace) Head(ctx context.Context) (string, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return "", err
	}
	return w.m.git.out(ctx, "", "--git-dir", w.m.mirror, "rev-parse", "-q", "--verify", "refs/heads/"+w.branch)
}

// Env are the variables a role running in the workspace gets.
func (w *Workspace) Env() map[string]string {
	return map[string]string{"DROVER_WORKSPACE": w.dir, "DROVER_BRANCH": w.branch, "DROVER_BASE_SHA": w.base}
}

func (w *Workspace) env() []string {
	var env []string
	for k, v := range w.Env() {
		env = append(env, k+"="+v)
	}
	return env
}

// usable checks the workspace is open, its directory is still a worktree
// and the files that tie it to the mirror are the ones Drover wrote. The
// caller holds w.mu.
func (w *Workspace) usable() error {
	if w.released {
		return ErrReleased
	}
	return w.m.checkLinks(w.dir)
}

// attach returns the commit HEAD is at, which must be the task's head or
// descend from it: the commits the agent made on the detached HEAD Drover
// left it (or, without a sandbox, on a branch it checked out), adopted as
// they are. It moves no ref: the branch is Drover's to move. (A conflicted
// index is found by addAll's status pass.) The caller holds w.mu.
func (w *Workspace) attach(ctx context.Context) (cur string, detached bool, err error) {
	g := w.m.git
	out, err := g.out(ctx, w.dir, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD")
	if err != nil {
		return "", false, fmt.Errorf("%w: HEAD does not resolve: %v", ErrWorkspaceBroken, err)
	}
	cur, sym, _ := strings.Cut(out, "\n")
	if sym == "HEAD" {
		sym = "" // detached
	}
	if !IsSHA(cur) {
		return "", false, fmt.Errorf("%w: HEAD does not resolve to a commit", ErrWorkspaceBroken)
	}
	if cur != w.head {
		// In the worktree: the agent's commits are in its private store.
		_, err := g.out(ctx, w.dir, "merge-base", "--is-ancestor", w.head, cur)
		var ge *gitError
		var exit *exec.ExitError
		switch {
		case err == nil:
		case errors.As(err, &ge) && errors.As(err, &exit) && exit.ExitCode() == 1:
			return "", false, fmt.Errorf("%w: HEAD (%s) moved to %.12s, which does not descend from the task's head %.12s", ErrWorkspaceBroken,
				orDetached(sym), cur, w.head)
		default: // a commit that does not read: "hash mismatch" for a forged one
			return "", false, fmt.Errorf("%w: the agent's commits above the task's head do not read: %v", ErrWorkspaceBroken, err)
		}
	}
	if sym != "" {
		w.m.log.Info("the agent checked out a branch; its commits are adopted on the task's branch", "branch", w.branch, "was", orDetached(sym), "head", cur)
	}
	return cur, sym == "", nil
}

// setHead points the task's branch at head (Drover alone moves it) and
// detaches the worktree's HEAD there, unless it is detached there already
// (at cur). The caller holds w.mu.
func (w *Workspace) setHead(ctx context.Context, head, cur string, detached bool) error {
	g := w.m.git
	if _, err := g.out(ctx, "", "--git-dir", w.m.mirror, "update-ref", "-m", "drover: record", "refs/heads/"+w.branch, head); err != nil {
		return fmt.Errorf("workspace: update-ref: %w", err)
	}
	if !detached || head != cur {
		if _, err := g.out(ctx, w.dir, "update-ref", "--no-deref", "-m", "drover: record", "HEAD", head); err != nil {
			return fmt.Errorf("workspace: detach HEAD: %w", err)
		}
	}
	return nil
}

func orDetached(sym string) string {
	if sym == "" {
		return "detached"
	}
	return strings.TrimPrefix(sym, "refs/heads/")
}
