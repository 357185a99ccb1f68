package mergequeue

import (
	"context"

	"github.com/droverhq/drover/internal/workspace"
)

// Repo is the git side of a merger: one worker's mirror of the repository.
type Repo interface {
	// TargetHead fetches and returns the commit the target points at.
	TargetHead(ctx context.Context, target string) (string, error)
	// Merged reports whether tip already holds head.
	Merged(ctx context.Context, tip, head string) bool
	// Scratch adds a scratch worktree at commit.
	Scratch(ctx context.Context, commit string) (Tree, error)
	// PushTarget moves target from old to commit, never forced;
	// workspace.ErrTargetMoved when the target is no longer at old.
	PushTarget(ctx context.Context, target, old, commit string) error
	// DeleteBranch deletes a sent-back task's branch on the remote if it
	// is still at head, so its next attempt, on the new target head, can
	// be pushed without force.
	DeleteBranch(ctx context.Context, branch, head string) error
}

// Tree is a scratch worktree.
type Tree interface {
	Reset(ctx context.Context, commit string) error
	Merge(ctx context.Context, head, msg string, rebase bool) (string, error)
	Run(ctx context.Context, c workspace.Command) error
	Close(ctx context.Context)
}

// GitRepo is the Repo of a workspace.Manager.
type GitRepo struct{ M *workspace.Manager }

// TargetHead implements Repo.
func (g GitRepo) TargetHead(ctx context.Context, target string) (string, error) {
	return g.M.TargetHead(ctx, target)
}

// Merged implements Repo.
func (g GitRepo) Merged(ctx context.Context, tip, head string) bool {
	return g.M.Merged(ctx, tip, head)
}

// Scratch implements Repo.
func (g GitRepo) Scratch(ctx context.Context, commit string) (Tree, error) {
	s, err := g.M.Scratch(ctx, commit)
	if err != nil {
		return nil, err
	}
	return s, nil
}

// PushTarget implements Repo.
func (g GitRepo) PushTarget(ctx context.Context, target, old, commit string) error {
	return g.M.PushTarget(ctx, target, old, commit)
}

// DeleteBranch implements Repo.
func (g GitRepo) DeleteBranch(ctx context.Context, branch, head string) error {
	return g.M.DeleteBranch(ctx, branch, head)
}
