package worker

import (
	"context"
	"errors"
	"fmt"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// workspaces adapts a workspace.Manager to the pipeline's Workspaces. It
// also decides what each workspace error means for the task:
//
//   - a change over max_patch_bytes, a branch that exists with other
//     history and a branch name the template cannot make are permanent:
//     the task fails with role_failed (no retry can fix them);
//   - a setup command that fails, a worktree the agent broke (conflicted
//     index, HEAD moved off the task's history, directory removed) and a
//     branch held by another worktree are retried: the next delivery opens
//     a fresh worktree from the recorded state and runs the role again;
//   - a patch that does not apply is pipeline.ErrPatchDoesNotApply (a
//     cache miss); a refused push is pipeline.ErrPushRejected.
//
// Every error's text has the credentials of the repository's and the push
// remote's URLs and the worker's secrets masked (a path an agent named may
// hold one): it goes to the audit stream.
type workspaces struct {
	m          *workspace.Manager
	push       bool
	keepFailed bool
	red        *redact.Redactor
}

func newWorkspaces(m *workspace.Manager, secrets ...string) *workspaces {
	cfg := m.Config()
	return &workspaces{m: m, push: cfg.Push, keepFailed: cfg.KeepFailed, red: repoRedactor(cfg, secrets...)}
}

// repoRedactor masks the credentials in the repository's and the push
// remote's URLs, and secrets.
func repoRedactor(cfg workspace.Config, secrets ...string) *redact.Redactor {
	return redact.New(append(append(redact.URLSecrets(cfg.Repo), redact.URLSecrets(cfg.PushRemote)...), secrets...)...)
}

// secretScanner finds the secrets no recorded change may hold: the
// credentials of the repository's URLs, cfg.NamedSecrets and cfg.Secrets,
// each under the name the scan's reason gives it.
func secretScanner(cfg Config) *redact.Redactor {
	var all []redact.Secret
	for _, u := range []struct{ field, url string }{{"workspace.repo", cfg.Workspace.Repo}, {"workspace.push_remote", cfg.Workspace.PushRemote}} {
		for _, s := range redact.URLSecrets(u.url) {
			all = append(all, redact.Secret{Name: "the credentials in " + u.field, Value: s})
		}
	}
	all = append(all, cfg.NamedSecrets...)
	for i, s := range cfg.Secrets {
		all = append(all, redact.Secret{Name: fmt.Sprintf("secret #%d", i+1), Value: s})
	}
	return redact.NewNamed(all...)
}

// errOf maps err (workspaceErr) and masks the URLs' credentials in its
// text; errors.Is still sees its causes.
func (a *workspaces) errOf(err error) error {
	err = workspaceErr(err)
	if err == nil || a.red.Empty() {
		return err
	}
	return a.red.Error(err)
}

// workspaceErr maps a workspace error to the pipeline's meaning.
func workspaceErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, workspace.ErrChangeTooLarge), errors.Is(err, workspace.ErrBranchExists),
		errors.Is(err, workspace.ErrChangeRefused),
		errors.Is(err, subjects.ErrInvalidBranch):
		return runner.Permanent(err)
	case errors.Is(err, workspace.ErrPatchDoesNotApply):
		return fmt.Errorf("%w: %w", pipeline.ErrPatchDoesNotApply, err)
	case errors.Is(err, workspace.ErrPushRejected):
		return fmt.Errorf("%w: %w", pipeline.ErrPushRejected, err)
	}
	return err
}

func (a *workspaces) ResolveBase(ctx context.Context) (string, error) {
	sha, err := a.m.ResolveBase(ctx)
	return sha, a.errOf(err)
}

func (a *workspaces) Branch(workflow, task, requested string) (string, error) {
	b, err := a.m.Branch(workflow, task, requested)
	return b, a.errOf(err)
}

func (a *workspaces) CheckBranch(branch string) error {
	return a.m.CheckBranch(branch)
}

func (a *workspaces) Open(ctx context.Context, s pipeline.WorkspaceSpec) (pipeline.Workspace, error) {
	spec := workspace.Spec{Workflow: s.Workflow, Task: s.Task, Branch: s.Branch, Base: s.Base}
	if r := s.Replay; r != nil {
		spec.Replay = []workspace.Patch{{Attempt: r.Attempt, Head: r.Head, Patch: r.Patch}}
	}
	w, err := a.m.Open(ctx, spec)
	if err != nil {
		return nil, a.errOf(err)
	}
	return &openWorkspace{w: w, a: a}, nil
}

func (a *workspaces) Push(ctx context.Context, branch, head string, leases ...string) (bool, error) {
	if !a.push {
		return false, nil
	}
	if err := a.m.PushLease(ctx, branch, head, leases...); err != nil {
		return false, a.errOf(err)
	}
	return true, nil
}

// openWorkspace adapts a workspace.Workspace.
type openWorkspace struct {
	w *workspace.Workspace
	a *workspaces
}

func (o *openWorkspace) Dir() string    { return o.w.Dir() }
func (o *openWorkspace) Branch() string { return o.w.Branch() }
func (o *openWorkspace) Base() string   { return o.w.Base() }

// SandboxPaths are what a contained role sees (pipeline's sandboxPaths).
func (o *openWorkspace) SandboxPaths() sandbox.Paths { return o.w.SandboxPaths() }

func (o *openWorkspace) Head(ctx context.Context) (string, error) {
	h, err := o.w.Head(ctx)
	return h, o.a.errOf(err)
}

func (o *openWorkspace) Commit(ctx context.Context, t pipeline.CommitTrailers, message string) (pipeline.WorkspaceDiff, error) {
	c, err := o.w.Commit(ctx, trailers(t), message)
	return diffOf(c), o.a.errOf(err)
}

func (o *openWorkspace) Apply(ctx context.Context, p pipeline.WorkspacePatch, t pipeline.CommitTrailers) (pipeline.WorkspaceDiff, error) {
	c, err := o.w.Apply(ctx, workspace.Patch{Attempt: p.Attempt, Head: p.Head, Patch: p.Patch}, trailers(t))
	return diffOf(c), o.a.errOf(err)
}

func (o *openWorkspace) Release(ctx context.Context, failed bool) error {
	return o.a.errOf(o.w.Release(ctx, failed && o.a.keepFailed))
}

func trailers(t pipeline.CommitTrailers) workspace.Trailers {
	return workspace.Trailers{Workflow: t.Workflow, Task: t.Task, Attempt: t.Attempt, EventID: t.EventID}
}

func diffOf(c workspace.Change) pipeline.WorkspaceDiff {
	files := make([]subjects.WorkspaceFile, len(c.Files))
	for i, f := range c.Files {
		files[i] = subjects.WorkspaceFile{Path: f.Path, Status: f.Status, Added: f.Added, Removed: f.Removed, Binary: f.Binary}
	}
	return pipeline.WorkspaceDiff{Base: c.Base, Head: c.Head, Files: files, Patch: c.Patch, Empty: c.Empty, Commits: c.Commits, Log: c.Log}
}
