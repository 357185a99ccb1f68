package workspace

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"

	"github.com/droverhq/drover/internal/sandbox"
)

// SandboxPaths are what a process contained in the workspace sees besides
// the system's directories: the worktree (its working directory) and its
// own git admin directory writable, so git inside commits on a detached
// HEAD, writing its objects to the private store in the admin directory
// (GIT_OBJECT_DIRECTORY, with the mirror's store as a read-only alternate;
// Commit imports what the recorded head needs); the rest of the mirror
// (refs, config, hooks, packed refs, objects) read-only, so no task can
// damage what the others and the mirror hold; the mirror's worktrees
// directory masked,
// so no other task's admin directory is visible; and a private HOME,
// Dir/homes/<worktree>/<task>, kept for the task's roles and commands.
// Open empties Dir/homes/<worktree> (resetHome), so a file an earlier task
// planted there (a .gitconfig, a shell profile) never reaches the next.
func (w *Workspace) SandboxPaths() sandbox.Paths {
	p := w.m.sandboxPaths(w.dir)
	sum := sha256.Sum256([]byte(w.branch))
	p.Home = filepath.Join(p.Home, hex.EncodeToString(sum[:8]))
	return p
}

// SandboxPaths are the scratch worktree's, as Workspace.SandboxPaths: the
// merge check runs contained in them. Its HOME is in the scratch's admin
// directory, removed with it by Close.
func (s *Scratch) SandboxPaths() sandbox.Paths {
	p := s.m.sandboxPaths(s.dir)
	p.Home = filepath.Join(p.Writable[0], "drover-home")
	return p
}

// sandboxPaths are the paths of the worktree dir, HOME Dir/homes/<name>.
// Its admin directory is named after dir's base name: worktree names are
// unique in a manager.
func (m *Manager) sandboxPaths(dir string) sandbox.Paths {
	name := filepath.Base(dir)
	worktrees := filepath.Join(m.mirror, "worktrees")
	return sandbox.Paths{
		Work:     dir,
		Writable: []string{filepath.Join(worktrees, name)},
		ReadOnly: []string{m.mirror},
		Masked:   []string{worktrees},
		Home:     m.homeDir(dir),
		Env: []string{
			"GIT_OBJECT_DIRECTORY=" + m.git.objectsDir(dir),
			"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(m.mirror, "objects"),
		},
	}
}
