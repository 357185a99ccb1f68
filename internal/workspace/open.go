package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/droverhq/drover/subjects"
)

// keptSuffix marks a kept worktree: Dir/wt/<name>.kept holds its branch.
const keptSuffix = ".kept"

// Spec is what Open needs: the task, its branch, the pinned base commit and
// the recorded changes to re-apply, in attempt order.
type Spec struct {
	Workflow, Task, Branch, Base string
	Replay                       []Patch
}

// Patch is a recorded change: the attempt, the head commit it made and the
// patch from the base (Change.Patch).
type Patch struct {
	Attempt int
	Head    string
	Patch   []byte
}

// Open gives the task a worktree on its branch at Base plus Replay. It
// reuses a released worktree when there is one (a checkout of what differs
// and a clean), else adds one; it waits for a slot when MaxWorktrees are
// open. A branch that exists with other history is ErrBranchExists; one open
// in another Workspace is ErrBranchBusy; a Replay patch that does not apply
// is ErrPatchDoesNotApply; a failing setup is ErrSetupFailed. When Open
// fails the worktree is released.
func (m *Manager) Open(ctx context.Context, s Spec) (*Workspace, error) {
	if err := subjects.ValidBranch(s.Branch); err != nil {
		return nil, fmt.Errorf("workspace: %w", err)
	}
	if !IsSHA(s.Base) {
		return nil, fmt.Errorf("workspace: base %.80q is not a commit id", s.Base)
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil, ErrClosed
	}
	if _, busy := m.open[s.Branch]; busy {
		m.mu.Unlock()
		return nil, fmt.Errorf("%w: %s", ErrBranchBusy, s.Branch)
	}
	w := &Workspace{m: m, branch: s.Branch, base: s.Base, workflow: s.Workflow, task: s.Task}
	m.open[s.Branch] = w
	m.mu.Unlock()
	if m.slots != nil {
		select {
		case m.slots <- struct{}{}:
		case <-ctx.Done():
			m.mu.Lock()
			delete(m.open, s.Branch)
			m.mu.Unlock()
			return nil, ctx.Err()
		}
	}

	if err := m.open1(ctx, w, s); err != nil {
		_ = w.release(context.WithoutCancel(ctx), false, err)
		return nil, err
	}
	return w, nil
}

func (m *Manager) open1(ctx context.Context, w *Workspace, s Spec) error {
	if err := m.haveCommit(ctx, s.Base); err != nil {
		return err
	}
	if err := m.checkBranch(ctx, s); err != nil {
		return err
	}
	start, replay := s.Base, s.Replay
	if n := len(replay); n > 0 && IsSHA(replay[n-1].Head) && m.descends(ctx, s.Base, replay[n-1].Head) {
		start, replay = replay[n-1].Head, nil // recorded here before: no need to re-apply
	}
	if err := m.checkout(ctx, w, start); err != nil {
		return err
	}
	w.head = start
	for _, p := range replay {
		if _, err := w.Apply(ctx, p, Trailers{Workflow: s.Workflow, Task: s.Task, Attempt: p.Attempt}); err != nil {
			return fmt.Errorf("replay attempt %d: %w", p.Attempt, err)
		}
	}
	if err := m.copyIgnored(w.dir); err != nil {
		return fmt.Errorf("%w: copy_ignored: %v", ErrSetupFailed, err)
	}
	for i, c := range m.cfg.Setup {
		if err := m.runCommand(ctx, w.SandboxPaths(), c, w.env()); err != nil {
			return fmt.Errorf("%w: setup[%d] %s: %v", ErrSetupFailed, i, c.Argv[0], err)
		}
	}
	return nil
}

// checkout puts the branch at start and a worktree detached there: a
// reused one whose links are intact (a checkout of what differs and a
// clean), else a new one. HEAD is detached so that the agent's own commits
// write only the worktree's HEAD, never a ref of the mirror; Drover moves
// the branch. The worktree's private HOME is emptied.
func (m *Manager) checkout(ctx context.Context, w *Workspace, start string) error {
	m.mu.Lock()
	var dir string
	if n := len(m.free); n > 0 {
		dir, m.free = m.free[n-1], m.free[:n-1]
	}
	m.mu.Unlock()
	if dir != "" {
		err := m.checkLinks(dir)
		if err == nil {
			err = m.scrubAdmin(dir)
		}
		if err == nil {
			m.wtLock.RLock()
			_, err = m.git.out(ctx, dir, "checkout", "-q", "-f", "--no-recurse-submodules", "--detach", start)
			m.wtLock.RUnlock()
		}
		if err == nil {
			_, err = m.git.out(ctx, dir, "clean", "-q", "-ffdx")
		}
		if err == nil {
			w.dir = dir
		} else {
			m.log.Warn("reused worktree failed to reset, replacing it", "dir", dir, "err", err)
			m.remove(ctx, dir)
		}
	}
	if w.dir == "" {
		m.mu.Lock()
		m.nextID++
		dir = filepath.Join(m.wtRoot, "w"+strconv.Itoa(m.nextID))
		m.mu.Unlock()
		if err := m.addWorktree(ctx, dir, start); err != nil {
			return err
		}
		w.dir = dir
	}
	if _, err := m.git.out(ctx, "", "--git-dir", m.mirror, "update-ref", "-m", "drover: open", "refs/heads/"+w.branch, start); err != nil {
		return fmt.Errorf("workspace: branch %s: %w", w.branch, err)
	}
	return m.resetHome(w.dir)
}

// haveCommit makes sure the mirror holds sha: fetching, then asking the
// remote for it by id.
func (m *Manager) haveCommit(ctx context.Context, sha string) error {
	has := func() bool {
		_, err := m.git.out(ctx, "", "--git-dir", m.mirror, "cat-file", "-e", sha+"^{commit}")
		return err == nil
	}
	if has() {
		return nil
	}
	if err := m.fetch(ctx); err != nil {
		return err
	}
	if has() {
		return nil
	}
	if _, err := m.git.out(ctx, "", "--git-dir", m.mirror, "fetch", "-q", "--no-tags", "--no-write-fetch-head", "origin", sha); err == nil && has() {
		return nil
	}
	return fmt.Errorf("workspace: base %s not found in %s", sha, m.cfg.Repo)
}

// descends reports whether commit exists and has base as an ancestor.
func (m *Manager) descends(ctx context.Context, base, commit string) bool {
	_, err := m.git.out(ctx, "", "--git-dir", m.mirror, "merge-base", "--is-ancestor", base, commit)
	return err == nil
}

// checkBranch refuses a branch that exists, here or on the remote, unless it
// is at the base, at the head the task's last attempt recorded, or Drover
// made it for the same workflow and task (its tip, and every commit of it
// the base does not hold but an agent's own beneath Drover's, carry their
// trailers). A branch held by a kept worktree is detached there first.
func (m *Manager) checkBranch(ctx context.Context, s Spec) error {
	refs, err := m.git.out(ctx, "", "--git-dir", m.mirror, "for-each-ref", "--format=%(refname)%00%(objectname)",
		"refs/heads/"+s.Branch, "refs/remotes/origin/"+s.Branch)
	if err != nil {
		return fmt.Errorf("workspace: %s: %w", s.Branch, err)
	}
	for _, line := range strings.Split(refs, "\n") {
		ref, sha, _ := strings.Cut(line, "\x00")
		if (ref != "refs/heads/"+s.Branch && ref != "refs/remotes/origin/"+s.Branch) || sha == s.Base {
			continue
		}
		if n := len(s.Replay); n > 0 && sha == s.Replay[n-1].Head {
			continue // the task's own recorded head, agent commits included
		}
		// A branch need not descend from the base: a task the merge queue
		// sent back is pinned again on the new target head, and its branch
		// is taken over when what it holds beyond that base is Drover's.
		// The tip must be Drover's commit for the task; beneath it, commits
		// without trailers are an agent's own, which Drover's commit
		// recorded on top.
		out, err := m.git.out(ctx, "", "--git-dir", m.mirror, "log", "--topo-order", "--max-count=1000",
			"--format=%(trailers:key=Drover-Workflow,valueonly,separator=%x2C)%x00%(trailers:key=Drover-Task,valueonly,separator=%x2C)",
			s.Base+".."+sha)
		if err != nil {
			return fmt.Errorf("workspace: %s: %w", s.Branch, err)
		}
		for i, line := range strings.Split(out, "\n") {
			wf, task, _ := strings.Cut(line, "\x00")
			wf, task = strings.TrimSpace(wf), strings.TrimSpace(task)
			if (i > 0 && wf == "" && task == "") || (wf == s.Workflow && task == s.Task) {
				continue
			}
			return fmt.Errorf("%w: %s holds commits not made by Drover for %s/%s", ErrBranchExists, s.Branch, s.Workflow, s.Task)
		}
	}
	m.mu.Lock()
	var keptDir string
	for dir, b := range m.kept {
		if b == s.Branch {
			keptDir = dir
		}
	}
	m.mu.Unlock()
	if keptDir != "" { // kept before HEADs were detached: detach it
		if head, err := m.git.out(ctx, keptDir, "rev-parse", "HEAD"); err == nil {
			_, _ = m.git.out(ctx, keptDir, "update-ref", "--no-deref", "HEAD", head)
		}
	}
	return nil
}

// Release frees the worktree: cleanup commands run (failures logged), then
// it is kept as it is when keep (counted in Stats.Kept, pruned by no later
// Start), else detached and made reusable. The branch stays in the mirror.
// Release is idempotent.
func (w *Workspace) Release(ctx context.Context, keep bool) error {
	return w.release(ctx, keep, nil)
}

func (w *Workspace) release(ctx context.Context, keep bool, cause error) error {
	w.mu.Lock()
	if w.released {
		w.mu.Unlock()
		return nil
	}
	w.released = true
	w.mu.Unlock()
	m := w.m
	defer func() {
		m.mu.Lock()
		delete(m.open, w.branch)
		m.mu.Unlock()
		m.freeSlot()
	}()
	if w.dir == "" {
		return nil
	}
	if cause == nil {
		for i, c := range m.cfg.Cleanup {
			if err := m.runCommand(ctx, w.SandboxPaths(), c, w.env()); err != nil {
				m.log.Warn("cleanup command failed", "index", i, "argv0", c.Argv[0], "branch", w.branch, "err", err)
			}
		}
	}
	if keep {
		if err := os.WriteFile(w.dir+keptSuffix, []byte(w.branch), 0o644); err != nil {
			return fmt.Errorf("workspace: keep: %w", err)
		}
		m.mu.Lock()
		m.kept[w.dir] = w.branch
		m.mu.Unlock()
		return nil
	}
	// A worktree whose links the agent changed is not reused. HEAD is
	// detached at the last recorded head (the next Open resets the
	// worktree anyway).
	err := m.checkLinks(w.dir)
	if err == nil {
		_, err = m.git.out(ctx, w.dir, "update-ref", "--no-deref", "HEAD", w.head)
	}
	m.mu.Lock()
	reuse := err == nil && !m.closed && (m.slots == nil || len(m.free) < cap(m.slots))
	if reuse {
		m.free = append(m.free, w.dir)
	}
	m.mu.Unlock()
	if !reuse {
		m.remove(ctx, w.dir)
	}
	return nil
}

func (m *Manager) freeSlot() {
	if m.slots != nil {
		<-m.slots
	}
}

// remove deletes a worktree directory, its admin directory (whatever its
// gitdir file says), its registration and its private HOME.
func (m *Manager) remove(ctx context.Context, dir string) {
	if err := os.RemoveAll(dir); err != nil {
		m.log.Warn("remove worktree", "dir", dir, "err", err)
	}
	_ = os.Remove(dir + keptSuffix)
	_ = os.RemoveAll(m.homeDir(dir))
	m.wtLock.Lock()
	defer m.wtLock.Unlock()
	_ = os.RemoveAll(m.git.adminDir(dir))
	_, _ = m.git.out(ctx, "", "--git-dir", m.mirror, "worktree", "prune")
}

// pruneStale removes the worktrees an earlier run left under Dir/wt, except
// the kept ones, and unregisters those whose directory is gone.
func (m *Manager) pruneStale(ctx context.Context) error {
	entries, err := os.ReadDir(m.wtRoot)
	if err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	kept := map[string]string{}
	for _, e := range entries {
		if name, ok := strings.CutSuffix(e.Name(), keptSuffix); ok {
			b, _ := os.ReadFile(filepath.Join(m.wtRoot, e.Name()))
			kept[filepath.Join(m.wtRoot, name)] = strings.TrimSpace(string(b))
		}
	}
	maxID := 0
	for _, e := range entries {
		dir := filepath.Join(m.wtRoot, e.Name())
		if id, err := strconv.Atoi(strings.TrimPrefix(strings.TrimSuffix(e.Name(), keptSuffix), "w")); err == nil {
			maxID = max(maxID, id)
		}
		if !e.IsDir() {
			continue
		}
		if _, ok := kept[dir]; ok {
			continue
		}
		m.log.Info("pruning a stale worktree", "dir", dir)
		if err := os.RemoveAll(dir); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("workspace: prune %s: %w", dir, err)
		}
	}
	for dir, b := range kept {
		if _, err := os.Stat(dir); err != nil {
			_ = os.Remove(dir + keptSuffix)
			delete(kept, dir)
		} else {
			m.kept[dir] = b
		}
	}
	m.nextID = maxID
	if _, err := m.git.out(ctx, "", "--git-dir", m.mirror, "worktree", "prune"); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	return nil
}

// IsSHA reports whether s is a full commit id: 40 (SHA-1) or 64 (SHA-256)
// lower-case hex digits.
func IsSHA(s string) bool {
	if len(s) != 40 && len(s) != 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(s[i] >= '0' && s[i] <= '9' || s[i] >= 'a' && s[i] <= 'f') {
			return false
		}
	}
	return true
}
