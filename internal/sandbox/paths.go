package sandbox

// Paths are the places a sandboxed process sees besides the system's
// read-only directories: its working directory, the other places it may
// write, the places it may only read, and its private HOME. Every path is
// absolute and keeps its real path inside, so the working directory is the
// same inside and outside. A path the process is not given is not visible
// to it.
type Paths struct {
	// Work is the working directory, writable: a task's worktree, or a
	// scratch directory for a role without a workspace. Empty: a fresh
	// private one that lives as long as the process (bubblewrap only;
	// without a sandbox it is required).
	Work string
	// Writable are further writable places: the worktree's own git admin
	// directory, which holds the private object store its commits are
	// written to.
	Writable []string
	// ReadOnly are visible but not writable: the mirror, whose refs,
	// config, packed refs and objects git inside the worktree reads.
	ReadOnly []string
	// Masked are directories shown empty (a tmpfs over them) although a
	// shallower path shows them: the mirror's worktrees directory, so the
	// admin directories of other tasks' worktrees stay out of sight. A
	// deeper path in Writable or ReadOnly (the task's own admin directory)
	// is still shown: every path is applied shallowest first.
	Masked []string
	// Home is the private HOME (and XDG directories), writable; made when
	// missing. Empty: a fresh one that lives as long as the process
	// (bubblewrap only; without a sandbox it is required).
	Home string
	// Env are variables every process contained in these paths gets, over
	// Spec.Env: GIT_OBJECT_DIRECTORY and GIT_ALTERNATE_OBJECT_DIRECTORIES,
	// so git in a worktree writes objects to its private store only.
	Env []string
}
