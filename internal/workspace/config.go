package workspace

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/droverhq/drover/subjects"
)

// Defaults of the Config fields that have one.
const (
	DefaultBranchTemplate = "drover/{workflow}/{task}"
	DefaultPushBatch      = 8
	DefaultPushDelay      = 200 * time.Millisecond
	DefaultMaxPatchBytes  = 8 << 20
	DefaultGitTimeout     = 5 * time.Minute
	DefaultCommandTimeout = 10 * time.Minute
	// DefaultMaxCopyBytes bounds what CopyIgnored copies into one worktree.
	DefaultMaxCopyBytes = 64 << 20
)

// Command is a setup or cleanup command (or the merge check): an argv
// started without a shell in the worktree's directory, contained by the
// sandbox, killed after Timeout (zero: 10 minutes).
type Command struct {
	Argv    []string      `yaml:"argv"`
	Timeout time.Duration `yaml:"timeout"`
	// Env are the variables the command gets besides PATH (the worker's),
	// HOME and TMPDIR (private ones) and DROVER_WORKSPACE, DROVER_BRANCH
	// and DROVER_BASE_SHA: "NAME" passes the worker's value when it has
	// one, "NAME=value" sets value. Nothing else of the worker's
	// environment reaches the command. Empty: none.
	Env []string `yaml:"env"`
}

// Validate checks c and sets its default timeout; errors name path, the
// command's place in the file ("workspace.setup[0]", "merge.check").
func (c *Command) Validate(path string) error {
	bad := func(sub, format string, a ...any) error {
		return fmt.Errorf("%w: %s.%s: %s", ErrInvalidConfig, path, sub, fmt.Sprintf(format, a...))
	}
	if len(c.Argv) == 0 || c.Argv[0] == "" {
		return bad("argv", "empty")
	}
	if c.Timeout < 0 {
		return bad("timeout", "%v is negative", c.Timeout)
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultCommandTimeout
	}
	for i, e := range c.Env {
		name, _, _ := strings.Cut(e, "=")
		switch {
		case !envName.MatchString(name):
			return bad(fmt.Sprintf("env[%d]", i), "%.80q is not NAME or NAME=value", e)
		case strings.HasPrefix(name, "DROVER_") || name == "HOME" || name == "TMPDIR" || strings.HasPrefix(name, "XDG_"):
			return bad(fmt.Sprintf("env[%d]", i), "%s is set by Drover", name)
		}
	}
	return nil
}

// envName is a variable's name.
var envName = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Config configures workspaces. The zero value is "off".
type Config struct {
	// Repo is the repository: a URL or a local path (a bare repository or a
	// working tree). Empty: workspaces off, nothing else is read.
	Repo string `yaml:"repo"`
	// BaseRef is the branch, tag or commit tasks start from. Empty: the
	// remote's default branch (its HEAD).
	BaseRef string `yaml:"base_ref"`
	// Dir is this worker's workspaces directory: the mirror and the
	// worktrees. Required when enabled; the worker's default is
	// <data>/workspaces. One worker per Dir.
	Dir string `yaml:"dir"`
	// BranchTemplate names a task's branch; {workflow} and {task} are
	// replaced by the IDs escaped for ref names. A request's own branch
	// wins. Default: "drover/{workflow}/{task}". It must start with
	// BranchPrefix.
	BranchTemplate string `yaml:"branch_template"`
	// BranchPrefix is the prefix a request's own branch must have unless
	// it matches AllowedBranches; it ends in "/". Default: "drover/".
	BranchPrefix string `yaml:"branch_prefix"`
	// AllowedBranches are patterns (path.Match syntax: "*" stays within
	// one "/" component) a request's branch may match instead of being
	// under BranchPrefix. Default: none.
	AllowedBranches []string `yaml:"allowed_branches"`
	// ProtectedBranches are patterns no request's branch may match and
	// no task's branch is ever pushed to or deleted as. main, master, the
	// remote's default branch and BaseRef are always protected; the
	// worker adds the merge target and the pull-request base. Default:
	// none besides those.
	ProtectedBranches []string `yaml:"protected_branches"`
	// Setup commands run in each opened worktree, in order, after the
	// ignored files are copied; one failing fails Open with ErrSetupFailed.
	Setup []Command `yaml:"setup"`
	// Cleanup commands run in a worktree when it is released; failures are
	// logged, never returned.
	Cleanup []Command `yaml:"cleanup"`
	// CopyIgnored lists paths or globs (filepath.Match syntax, relative,
	// no "..") copied into each opened worktree from CopyFrom, for files git
	// does not hold such as .env. Directories are copied recursively;
	// symbolic links are skipped; at most 64 MiB in all.
	CopyIgnored []string `yaml:"copy_ignored"`
	// CopyFrom is the directory CopyIgnored is read from. Default: Repo when
	// Repo is a local path with a working tree; required otherwise when
	// CopyIgnored is set.
	CopyFrom string `yaml:"copy_from"`
	// Push pushes approved branches to PushRemote (default: Repo).
	Push       bool   `yaml:"push"`
	PushRemote string `yaml:"push_remote"`
	// PushBatch is the most refspecs in one git push (default 8); PushDelay
	// how long a push waits for more branches to join it (default 200ms).
	PushBatch int           `yaml:"push_batch"`
	PushDelay time.Duration `yaml:"push_delay"`
	// KeepFailed keeps the worktrees of failed tasks (the caller passes keep
	// to Release); kept worktrees do not count against MaxWorktrees.
	KeepFailed bool `yaml:"keep_failed"`
	// MaxWorktrees bounds the open worktrees (the worker sets it to its pool
	// size); Open waits for a free slot. Zero: unbounded.
	MaxWorktrees int `yaml:"max_worktrees"`
	// MaxPatchBytes bounds a recorded patch and the bytes an agent may add
	// in one commit (default 8 MiB); more is ErrChangeTooLarge.
	MaxPatchBytes int `yaml:"max_patch_bytes"`
	// GitTimeout bounds one git command (default 5 minutes).
	GitTimeout time.Duration `yaml:"git_timeout"`
}

// Enabled reports whether workspaces are on: a repository is named.
func (c Config) Enabled() bool { return c.Repo != "" }

// orDefault refuses a negative *v and sets a zero one to def.
func orDefault[T int | int64 | time.Duration](field string, v *T, def T) error {
	switch {
	case *v < 0:
		return fmt.Errorf("%w: workspace.%s: %v is negative", ErrInvalidConfig, field, *v)
	case *v == 0:
		*v = def
	}
	return nil
}

// Validate fills the defaults and checks the fields; errors name the field.
// A disabled Config is valid whatever else it holds.
func (c *Config) Validate() error {
	if !c.Enabled() {
		return nil
	}
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: workspace.%s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, a...))
	}
	if strings.HasPrefix(c.Repo, "-") || strings.ContainsAny(c.Repo, "\x00\n") {
		return bad("repo", "%.80q is not a URL or a path", c.Repo)
	}
	if isLocal(c.Repo) {
		abs, err := filepath.Abs(c.Repo)
		if err != nil {
			return bad("repo", "%v", err)
		}
		c.Repo = abs
	}
	if c.BaseRef != "" && (strings.HasPrefix(c.BaseRef, "-") || strings.ContainsAny(c.BaseRef, " ~^:?*[\\\x00")) {
		return bad("base_ref", "%.80q is not a branch, tag or commit", c.BaseRef)
	}
	if c.Dir == "" {
		return bad("dir", "required")
	}
	abs, err := filepath.Abs(c.Dir)
	if err != nil {
		return bad("dir", "%v", err)
	}
	c.Dir = abs
	if c.BranchTemplate == "" {
		c.BranchTemplate = DefaultBranchTemplate
	}
	if probe := expand(c.BranchTemplate, "w", "t"); subjects.ValidBranch(probe) != nil ||
		(!strings.Contains(c.BranchTemplate, "{task}")) {
		return bad("branch_template", "%.80q must contain {task} and give a valid branch name", c.BranchTemplate)
	}
	if err := c.validateBranchPolicy(); err != nil {
		return err
	}
	for i, cmds := range [][]Command{c.Setup, c.Cleanup} {
		field := [...]string{"setup", "cleanup"}[i]
		for j := range cmds {
			if err := cmds[j].Validate(fmt.Sprintf("workspace.%s[%d]", field, j)); err != nil {
				return err
			}
		}
	}
	for i, g := range c.CopyIgnored {
		if _, err := filepath.Match(g, ""); err != nil || g == "" || filepath.IsAbs(g) ||
			slicesContains(strings.Split(filepath.ToSlash(g), "/"), "..") {
			return bad(fmt.Sprintf("copy_ignored[%d]", i), "%.80q must be a relative path or glob without \"..\"", g)
		}
	}
	if c.CopyFrom == "" && len(c.CopyIgnored) > 0 {
		if fi, err := os.Stat(filepath.Join(c.Repo, ".git")); isLocal(c.Repo) && err == nil && fi != nil {
			c.CopyFrom = c.Repo
		} else {
			return bad("copy_from", "required when copy_ignored is set and repo is not a local working tree")
		}
	}
	if c.PushRemote == "" {
		c.PushRemote = c.Repo
	} else if strings.HasPrefix(c.PushRemote, "-") || strings.ContainsAny(c.PushRemote, "\x00\n") {
		return bad("push_remote", "%.80q is not a URL or a path", c.PushRemote)
	}
	if err := orDefault("push_batch", &c.PushBatch, DefaultPushBatch); err != nil {
		return err
	}
	if err := orDefault("push_delay", &c.PushDelay, DefaultPushDelay); err != nil {
		return err
	}
	if c.MaxWorktrees < 0 {
		return bad("max_worktrees", "%d is negative", c.MaxWorktrees)
	}
	if err := orDefault("max_patch_bytes", &c.MaxPatchBytes, DefaultMaxPatchBytes); err != nil {
		return err
	}
	if err := orDefault("git_timeout", &c.GitTimeout, DefaultGitTimeout); err != nil {
		return err
	}
	return nil
}

// isLocal reports whether repo names a local path rather than a URL
// (scheme://..., file:// included, or scp-like user@host:path).
func isLocal(repo string) bool {
	if strings.Contains(repo, "://") {
		return false
	}
	if i := strings.IndexByte(repo, ':'); i > 0 && !strings.ContainsRune(repo[:i], '/') {
		return false
	}
	return true
}

func slicesContains(s []string, v string) bool {
	for _, x := range s {
		if x == v {
			return true
		}
	}
	return false
}
