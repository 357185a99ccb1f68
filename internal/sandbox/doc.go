// Package sandbox runs the processes that execute agent-controlled code
// (exec runners, setup and cleanup commands, the merge check) contained:
// on Linux under bubblewrap, with the task's worktree the only writable
// place besides a private HOME and tmp, its own PID namespace, no new
// privileges, and an environment that is built, never inherited.
//
// The package imports nothing of Drover's.
package sandbox
