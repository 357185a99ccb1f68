package workspace

import (
	"errors"
	"fmt"
)

var (
	// ErrPatchDoesNotApply is returned by Apply (and Open, for a Replay) when
	// a recorded patch does not apply to the base or does not give the
	// recorded tree. Callers treat it as a cache miss.
	ErrPatchDoesNotApply = errors.New("workspace: patch does not apply")
	// ErrPushRejected is returned by Push when the remote refused the ref; it
	// wraps the remote's message.
	ErrPushRejected = errors.New("workspace: push rejected")
	// ErrChangeTooLarge is returned when a change exceeds MaxPatchBytes.
	ErrChangeTooLarge = errors.New("workspace: change too large")
	// ErrSetupFailed is returned by Open when copying ignored files or a setup
	// command fails.
	ErrSetupFailed = errors.New("workspace: setup failed")
	// ErrBranchExists is returned by Open when the branch already exists
	// (locally or on the remote) with history Drover did not make for the
	// same workflow and task on the same base.
	ErrBranchExists = errors.New("workspace: branch exists with other history")
	// ErrBranchBusy is returned by Open when another open workspace of this
	// Manager holds the branch.
	ErrBranchBusy = errors.New("workspace: branch is open in another workspace")
	// ErrWorkspaceBroken is returned by Commit, Diff and Apply when the agent
	// left the worktree in a state Drover will not record: the directory
	// removed, a conflicted index, HEAD moved to history that does not
	// descend from the task's head.
	ErrWorkspaceBroken = errors.New("workspace: worktree broken")
	// ErrReleased is returned by a Workspace's methods after Release.
	ErrReleased = errors.New("workspace: released")
	// ErrClosed is returned by Push and Open after Close.
	ErrClosed = errors.New("workspace: manager closed")
	// ErrInvalidConfig is wrapped by every Validate error.
	ErrInvalidConfig = errors.New("invalid workspace config")
)

// ErrChangeRefused is matched by the error of a change Drover refuses to
// record whatever the attempt: a nested repository, a path git never
// writes, an agent's commit with a Drover- trailer line. It also matches
// ErrWorkspaceBroken; a worker fails the task at once instead of paying
// for the agent again.
var ErrChangeRefused = errors.New("workspace: change refused")

type refusedError struct{ msg string }

func (e refusedError) Error() string { return "change refused: " + e.msg }

func (e refusedError) Is(target error) bool {
	return target == ErrChangeRefused || target == ErrWorkspaceBroken
}

func refused(format string, a ...any) error { return refusedError{fmt.Sprintf(format, a...)} }
