package workspace

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
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
	return w.m.git.out(ctx, w.dir, "rev-parse", "-q", "--verify", "refs/heads/"+w.branch)
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

// usable checks the workspace is open and its directory is still a
// worktree. The caller holds w.mu.
func (w *Workspace) usable() error {
	if w.released {
		return ErrReleased
	}
	if fi, err := os.Stat(w.dir); err != nil || !fi.IsDir() {
		return fmt.Errorf("%w: the worktree directory %s was removed", ErrWorkspaceBroken, filepath.Base(w.dir))
	}
	if fi, err := os.Lstat(filepath.Join(w.dir, ".git")); err != nil || !fi.Mode().IsRegular() {
		return fmt.Errorf("%w: the worktree's .git file was removed or replaced", ErrWorkspaceBroken)
	}
	return nil
}

// attach makes sure HEAD is the task's branch, adopting commits the agent
// made on a detached HEAD or another branch when they descend from the
// task's head. It returns the branch's head. (A conflicted index is found
// by addAll's status pass.)
// The caller holds w.mu.
func (w *Workspace) attach(ctx context.Context) (string, error) {
	g, ref := w.m.git, "refs/heads/"+w.branch
	out, err := g.out(ctx, w.dir, "rev-parse", "HEAD", "--symbolic-full-name", "HEAD")
	if err != nil {
		return "", fmt.Errorf("%w: HEAD does not resolve: %v", ErrWorkspaceBroken, err)
	}
	cur, sym, _ := strings.Cut(out, "\n")
	if sym == "HEAD" {
		sym = "" // detached
	}
	if cur != w.head {
		if _, err := g.out(ctx, w.dir, "merge-base", "--is-ancestor", w.head, cur); err != nil {
			return "", fmt.Errorf("%w: HEAD (%s) moved to %.12s, which does not descend from the task's head %.12s", ErrWorkspaceBroken,
				orDetached(sym), cur, w.head)
		}
	}
	if sym != ref {
		if _, err := g.out(ctx, w.dir, "update-ref", "-m", "drover: adopt the agent's commits", ref, cur); err != nil {
			return "", err
		}
		if _, err := g.out(ctx, w.dir, "symbolic-ref", "HEAD", ref); err != nil {
			return "", err
		}
		w.m.log.Info("reattached HEAD to the task's branch", "branch", w.branch, "was", orDetached(sym), "head", cur)
	}
	return cur, nil
}

func orDetached(sym string) string {
	if sym == "" {
		return "detached"
	}
	return strings.TrimPrefix(sym, "refs/heads/")
}
