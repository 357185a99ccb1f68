package workspace

import (
	"path/filepath"

	"github.com/droverhq/drover/internal/sandbox"
)

// SandboxPaths are what a process contained in the workspace sees besides
// the system's directories: the worktree (its working directory) and its
// own git admin directory and the mirror's object store writable, so git
// inside commits on a detached HEAD; the rest of the mirror (refs, config,
// hooks, packed refs) read-only; the mirror's worktrees directory masked,
// so no other task's admin directory is visible; and a private HOME,
// Dir/homes/<worktree>.
func (w *Workspace) SandboxPaths() sandbox.Paths { return w.m.sandboxPaths(w.dir) }

// SandboxPaths are the scratch worktree's, as Workspace.SandboxPaths: the
// merge check runs contained in them.
func (s *Scratch) SandboxPaths() sandbox.Paths { return s.m.sandboxPaths(s.dir) }

// sandboxPaths are the paths of the worktree dir. Its admin directory is
// named after dir's base name: worktree names are unique in a manager.
func (m *Manager) sandboxPaths(dir string) sandbox.Paths {
	name := filepath.Base(dir)
	worktrees := filepath.Join(m.mirror, "worktrees")
	return sandbox.Paths{
		Work:     dir,
		Writable: []string{filepath.Join(worktrees, name), filepath.Join(m.mirror, "objects")},
		ReadOnly: []string{m.mirror},
		Masked:   []string{worktrees},
		Home:     filepath.Join(m.cfg.Dir, "homes", name),
	}
}
