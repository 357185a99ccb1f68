package cli

import (
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/droverhq/drover/internal/workspace"
)

// addWorkspaceFlags registers serve's --workspace-* flags, one per key of
// the configuration file's workspace: block but setup and cleanup (argv
// lists: in the file only). Each has its DROVER_WORKSPACE_* variable.
func addWorkspaceFlags(fl *pflag.FlagSet, c *workspace.Config) {
	fl.StringVar(&c.Repo, "workspace-repo", "", `git repository (URL or local path) each task gets a worktree of ("" turns workspaces off)`)
	fl.StringVar(&c.BaseRef, "workspace-base-ref", "", "branch, tag or commit tasks start from (default: the remote's default branch)")
	fl.StringVar(&c.Dir, "workspace-dir", "", "this worker's workspaces directory: mirror and worktrees (default <data>/workspaces)")
	fl.StringVar(&c.BranchTemplate, "workspace-branch-template", workspace.DefaultBranchTemplate, "a task's branch; {workflow} and {task} are replaced (a request's branch wins)")
	fl.StringVar(&c.BranchPrefix, "workspace-branch-prefix", workspace.DefaultBranchPrefix, "prefix a request's own branch must have (unless it matches --workspace-allowed-branches); the template's too")
	fl.StringSliceVar(&c.AllowedBranches, "workspace-allowed-branches", nil, "patterns a request's branch may match instead of the prefix, comma-separated (e.g. feat/*)")
	fl.StringSliceVar(&c.ProtectedBranches, "workspace-protected-branches", nil, "patterns never a request's branch nor pushed for a task, comma-separated; main, master, the remote's default branch, the base ref, the merge target and the pull-request base always are")
	fl.StringSliceVar(&c.CopyIgnored, "workspace-copy-ignored", nil, "paths or globs of ignored files (such as .env) copied into each worktree, comma-separated")
	fl.StringVar(&c.CopyFrom, "workspace-copy-from", "", "directory --workspace-copy-ignored reads from (default: the repository's working tree)")
	fl.BoolVar(&c.Push, "workspace-push", false, "push each approved task's branch (batched)")
	fl.StringVar(&c.PushRemote, "workspace-push-remote", "", "where to push (default: --workspace-repo)")
	fl.IntVar(&c.PushBatch, "workspace-push-batch", workspace.DefaultPushBatch, "most branches in one git push")
	fl.DurationVar(&c.PushDelay, "workspace-push-delay", workspace.DefaultPushDelay, "how long a push waits for more branches to join it")
	fl.BoolVar(&c.KeepFailed, "workspace-keep-failed", false, "keep the worktrees of failed tasks for inspection")
	fl.IntVar(&c.MaxPatchBytes, "workspace-max-patch-bytes", workspace.DefaultMaxPatchBytes, "largest change an attempt may record; more fails the task")
	fl.DurationVar(&c.GitTimeout, "workspace-git-timeout", workspace.DefaultGitTimeout, "timeout of one git command")
}

// mergeWorkspace applies the file's workspace: block under the flags: a
// flag set on the command line or by its variable wins.
func mergeWorkspace(fs *pflag.FlagSet, dst *workspace.Config, file workspace.Config) {
	override(fs, "workspace-repo", &dst.Repo, file.Repo)
	override(fs, "workspace-base-ref", &dst.BaseRef, file.BaseRef)
	override(fs, "workspace-dir", &dst.Dir, file.Dir)
	override(fs, "workspace-branch-template", &dst.BranchTemplate, file.BranchTemplate)
	override(fs, "workspace-branch-prefix", &dst.BranchPrefix, file.BranchPrefix)
	overrideSlice(fs, "workspace-allowed-branches", &dst.AllowedBranches, file.AllowedBranches)
	overrideSlice(fs, "workspace-protected-branches", &dst.ProtectedBranches, file.ProtectedBranches)
	overrideSlice(fs, "workspace-copy-ignored", &dst.CopyIgnored, file.CopyIgnored)
	override(fs, "workspace-copy-from", &dst.CopyFrom, file.CopyFrom)
	override(fs, "workspace-push", &dst.Push, file.Push)
	override(fs, "workspace-push-remote", &dst.PushRemote, file.PushRemote)
	override(fs, "workspace-push-batch", &dst.PushBatch, file.PushBatch)
	override(fs, "workspace-push-delay", &dst.PushDelay, file.PushDelay)
	override(fs, "workspace-keep-failed", &dst.KeepFailed, file.KeepFailed)
	override(fs, "workspace-max-patch-bytes", &dst.MaxPatchBytes, file.MaxPatchBytes)
	override(fs, "workspace-git-timeout", &dst.GitTimeout, file.GitTimeout)
	dst.Setup, dst.Cleanup = file.Setup, file.Cleanup
	dst.MaxWorktrees = file.MaxWorktrees
}

// workspaceConfig is the worker's workspace configuration: off without a
// repository, else with its directory under --data by default.
func workspaceConfig(f serveFlags) workspace.Config {
	c := f.workspace
	if !c.Enabled() {
		return workspace.Config{}
	}
	if c.Dir == "" {
		c.Dir = filepath.Join(f.data, "workspaces")
	}
	return c
}
