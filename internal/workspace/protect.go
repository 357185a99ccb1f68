package workspace

import (
	"errors"
	"fmt"
	"path"
	"strings"
)

// DefaultBranchPrefix is the prefix a request's branch must have unless it
// matches Config.AllowedBranches.
const DefaultBranchPrefix = "drover/"

// alwaysProtected are protected whatever the configuration says.
var alwaysProtected = []string{"main", "master"}

// Errors of the branch policy.
var (
	// ErrBranchNotAllowed: a request's branch is neither under the branch
	// prefix nor matched by AllowedBranches.
	ErrBranchNotAllowed = errors.New("branch not allowed")
	// ErrBranchProtected: a request's branch, or a branch about to be
	// pushed or deleted for a task, is a protected branch.
	ErrBranchProtected = errors.New("protected branch")
)

// CheckBranch is the branch policy for a request's own branch: it must pass
// subjects.ValidBranch, be under BranchPrefix or match AllowedBranches, and
// never be protected (see protectedBy). The error names the field and the
// rule; it wraps ErrBranchNotAllowed or ErrBranchProtected.
func (m *Manager) CheckBranch(branch string) error {
	if _, err := m.Branch("w", "t", branch); err != nil {
		return err
	}
	if why := m.protectedBy(branch); why != "" {
		return fmt.Errorf("%w: %.80q is %s; a request's branch is never the base ref, the merge target, the pull-request base or a protected branch",
			ErrBranchProtected, branch, why)
	}
	if strings.HasPrefix(branch, m.cfg.BranchPrefix) {
		return nil
	}
	for _, p := range m.cfg.AllowedBranches {
		if ok, _ := path.Match(p, branch); ok {
			return nil
		}
	}
	return fmt.Errorf("%w: %.80q is not under %q and matches no workspace.allowed_branches pattern",
		ErrBranchNotAllowed, branch, m.cfg.BranchPrefix)
}

// refuseProtected is the last line of defence where a task's branch is
// pushed or deleted: a protected branch is refused whatever admitted it
// (the merge queue moves its target through PushTarget, never here).
func (m *Manager) refuseProtected(branch string) error {
	if why := m.protectedBy(branch); why != "" {
		return fmt.Errorf("workspace: %w: refusing to push or delete %.80q for a task: it is %s", ErrBranchProtected, branch, why)
	}
	return nil
}

// protectedBy says why branch is protected ("" when it is not): main and
// master, the remote's default branch, the base ref, and the
// ProtectedBranches patterns (which the worker extends with the merge
// target and the pull-request base). Names are compared without regard
// to case, as some forges and file systems compare refs.
func (m *Manager) protectedBy(branch string) string {
	b := strings.ToLower(branch)
	m.mu.Lock()
	def := strings.TrimPrefix(m.defHead, "refs/heads/")
	m.mu.Unlock()
	if def != "" && b == strings.ToLower(def) {
		return "the remote's default branch"
	}
	if base := strings.TrimPrefix(m.cfg.BaseRef, "refs/heads/"); base != "" && b == strings.ToLower(base) {
		return "the base ref (workspace.base_ref)"
	}
	for _, p := range append(alwaysProtected, m.cfg.ProtectedBranches...) {
		if ok, _ := path.Match(strings.ToLower(p), b); ok {
			return fmt.Sprintf("protected (pattern %q)", p)
		}
	}
	return ""
}

// validateBranchPolicy fills BranchPrefix and checks the patterns and that
// the branch template names branches under the prefix.
func (c *Config) validateBranchPolicy() error {
	bad := func(field, format string, a ...any) error {
		return fmt.Errorf("%w: workspace.%s: %s", ErrInvalidConfig, field, fmt.Sprintf(format, a...))
	}
	if c.BranchPrefix == "" {
		c.BranchPrefix = DefaultBranchPrefix
	}
	if !strings.HasSuffix(c.BranchPrefix, "/") || strings.HasPrefix(c.BranchPrefix, "-") ||
		strings.ContainsAny(c.BranchPrefix, " ~^:?*[\\\x00") || strings.Contains(c.BranchPrefix, "..") {
		return bad("branch_prefix", "%.80q must be a branch name prefix ending in \"/\", such as %q", c.BranchPrefix, DefaultBranchPrefix)
	}
	for field, list := range map[string][]string{"allowed_branches": c.AllowedBranches, "protected_branches": c.ProtectedBranches} {
		for i, p := range list {
			if _, err := path.Match(p, ""); err != nil || p == "" {
				return bad(fmt.Sprintf("%s[%d]", field, i), "%.80q is not a pattern (path.Match syntax)", p)
			}
		}
	}
	if strings.Contains(c.BranchPrefix, "{") || !strings.HasPrefix(c.BranchTemplate, c.BranchPrefix) {
		return bad("branch_template", "%.80q must name branches under the branch prefix %q", c.BranchTemplate, c.BranchPrefix)
	}
	return nil
}
