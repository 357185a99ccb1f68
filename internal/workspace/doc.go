// Package workspace gives every task its own git worktree on its own branch,
// records what an agent changed as a commit and a patch from the task's base,
// replays recorded patches (a cache hit, a resume on another worker) and
// pushes approved branches in batches.
//
// One Manager per worker owns a bare mirror of the repository (Dir/mirror.git)
// and the worktrees made from it (Dir/wt/*). Fetches are coalesced: callers
// that ask while a fetch runs share it. Worktrees of finished tasks are reused
// with a fast reset, so a task pays for a checkout of what differs, not of the
// whole tree.
//
// Git is the real git binary, started with an argv (never a shell), a clean
// environment (GIT_CONFIG_NOSYSTEM, a private HOME, no terminal prompt), the
// git dir, common dir and work tree named explicitly (never found through a
// file an agent can write), command-line overrides of the keys that run
// programs, and a timeout. Everything an agent leaves in a worktree is untrusted: sizes are
// bounded, commit messages sanitised, and a broken worktree fails only its
// own task.
//
// The package imports nothing of Drover's but subjects.
package workspace
