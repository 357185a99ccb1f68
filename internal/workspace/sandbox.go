package workspace

import (
	"path/filepath"

	"github.com/droverhq/drover/internal/sandbox"
)

// SandboxPaths are what a contained process in the worktree sees: the
// worktree, writable with its own git admin directory and the mirror's
// object store (so git inside it can commit), the mirror read-only (its
// refs and config), and a private HOME under Dir/homes.
func (w *Workspace) SandboxPaths() sandbox.Paths { return worktreePaths(w.m.cfg.Dir, w.dir) }

// SandboxPaths are the same for the scratch worktree of a merge.
func (s *Scratch) SandboxPaths() sandbox.Paths { return worktreePaths(s.m.cfg.Dir, s.dir) }

func worktreePaths(root, dir string) sandbox.Paths {
	mirror := filepath.Join(root, "mirror.git")
	name := filepath.Base(dir)
	return sandbox.Paths{
		Work:     dir,
		Writable: []string{filepath.Join(mirror, "worktrees", name), filepath.Join(mirror, "objects")},
		ReadOnly: []string{mirror},
		Home:     filepath.Join(root, "homes", name),
	}
}
