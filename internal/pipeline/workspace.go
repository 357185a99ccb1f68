package pipeline

import (
	"context"
	"errors"
	"time"

	"github.com/droverhq/drover/subjects"
)

// Workspaces gives tasks their git workspaces: one worktree per task on its
// own branch, from a base commit pinned in the task's state. The pipeline
// depends on this interface only; the worker adapts the workspace package
// to it. A nil Deps.Workspaces turns workspaces off, and then nothing
// changes.
//
// Errors that no retry can fix (a change over the size bound, a branch
// that exists with other history) are marked Permanent, so the task fails
// with role_failed; any other error is retried like a role error.
type Workspaces interface {
	// ResolveBase fetches the repository and resolves the base ref to a
	// commit.
	ResolveBase(ctx context.Context) (string, error)
	// Branch names the task's branch; requested (the request's branch)
	// wins when set.
	Branch(workflow, task, requested string) (string, error)
	// CheckBranch is the branch policy for a request's own branch, at
	// admission: an error (naming the branch and the rule) rejects the
	// request with invalid_value.
	CheckBranch(branch string) error
	// Open gives the task a worktree on its branch at the spec's base,
	// with the replayed patch applied.
	Open(ctx context.Context, s WorkspaceSpec) (Workspace, error)
	// Push pushes an approved head; pushed is false when pushing is not
	// configured. leases are heads Drover recorded for the branch before
	// (pushed, maybe, by a delivery that crashed): the remote's branch is
	// replaced when it holds one of them, and refused when it holds
	// anything else that head does not descend from. It returns when the
	// ref is pushed, refused (an error wrapping ErrPushRejected) or ctx is
	// done; a remote that is down is retried meanwhile.
	Push(ctx context.Context, branch, head string, leases ...string) (pushed bool, err error)
}

// WorkspaceSpec says which worktree to open.
type WorkspaceSpec struct {
	Workflow, Task, Branch, Base string
	// Replay is the recorded change to apply on the base: the last
	// recorded attempt's patch from the base (nil: none yet).
	Replay *WorkspacePatch
}

// WorkspacePatch is a recorded change: the patch from the base, and the
// head it was recorded with (the result must have that head's tree).
type WorkspacePatch struct {
	Attempt int
	Head    string
	Patch   []byte
}

// Workspace is one task's open worktree, owned by one delivery.
type Workspace interface {
	Dir() string
	Branch() string
	Base() string
	// Head is the worktree's current commit.
	Head(ctx context.Context) (string, error)
	// Commit commits whatever the role changed, with trailers, and
	// returns the change from the base.
	Commit(ctx context.Context, t CommitTrailers, message string) (WorkspaceDiff, error)
	// Apply applies a recorded patch on the current head and commits it;
	// an error wrapping ErrPatchDoesNotApply when it does not apply.
	Apply(ctx context.Context, p WorkspacePatch, t CommitTrailers) (WorkspaceDiff, error)
	// Release frees the worktree; failed says the task failed (the
	// adapter keeps it when configured to).
	Release(ctx context.Context, failed bool) error
}

// CommitTrailers name a commit's task in its message.
type CommitTrailers struct {
	Workflow, Task string
	Attempt        int
	EventID        string
}

// WorkspaceDiff is a committed change from the base.
type WorkspaceDiff struct {
	Base, Head string
	Files      []subjects.WorkspaceFile
	Patch      []byte
	Empty      bool
	Commits    int
	// Log is the attempt's commits as git shows them (authors and
	// messages), for the secret scan: an agent's own commits are pushed as
	// written. "" when the workspace does not report it.
	Log string
}

var (
	// ErrPatchDoesNotApply is wrapped by Apply's error when a recorded
	// patch no longer applies: for a cached result, a miss.
	ErrPatchDoesNotApply = errors.New("recorded patch does not apply")
	// ErrPushRejected is wrapped by Push's error when the remote refused
	// the ref: the task fails with push_rejected.
	ErrPushRejected = errors.New("push rejected")
)

// releaseTimeout bounds releasing a worktree after the task's delivery.
const releaseTimeout = 30 * time.Second
