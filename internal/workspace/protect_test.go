package workspace

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// TestCheckBranch: the branch policy of a request's own branch, against a
// remote whose default branch is trunk.
func TestCheckBranch(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	gitT(t, repo.remote, "branch", "trunk", "main")
	gitT(t, repo.remote, "symbolic-ref", "HEAD", "refs/heads/trunk")
	m := newManager(t, repo.remote, func(c *Config) {
		c.BaseRef = "refs/heads/stable"
		c.AllowedBranches = []string{"feat/*"}
		c.ProtectedBranches = []string{"release/*", "prod", "drover/locked/*"}
	})
	for _, tc := range []struct {
		branch string
		want   error // nil: allowed
		why    string
	}{
		{"drover/wf/T1", nil, ""},
		{"drover/main", nil, ""},
		{"feat/login", nil, ""},
		{"main", ErrBranchProtected, `pattern "main"`},
		{"MAIN", ErrBranchProtected, `pattern "main"`},
		{"master", ErrBranchProtected, `pattern "master"`},
		{"trunk", ErrBranchProtected, "the remote's default branch"},
		{"stable", ErrBranchProtected, "the base ref"},
		{"release/1.0", ErrBranchProtected, `pattern "release/*"`},
		{"prod", ErrBranchProtected, `pattern "prod"`},
		{"drover/locked/x", ErrBranchProtected, `pattern "drover/locked/*"`},
		{"feat/a/b", ErrBranchNotAllowed, `not under "drover/"`},
		{"other/x", ErrBranchNotAllowed, `not under "drover/"`},
		{"drover", ErrBranchNotAllowed, `not under "drover/"`},
		{"drover/../main", subjects.ErrInvalidBranch, ""},
		{"-main", subjects.ErrInvalidBranch, ""},
	} {
		err := m.CheckBranch(tc.branch)
		if tc.want == nil {
			require.NoError(t, err, tc.branch)
			continue
		}
		require.ErrorIs(t, err, tc.want, tc.branch)
		require.Contains(t, err.Error(), tc.why, tc.branch)
	}
}

// TestPushRefusesProtected: the last line of defence. Whatever admitted
// it, a task's head is never pushed to a protected branch, and a
// protected branch is never deleted for a task; the remote's main does
// not move.
func TestPushRefusesProtected(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, func(c *Config) {
		c.Push = true
		c.ProtectedBranches = []string{"release/*"}
	})
	heads := commitTasks(t, m, repo.base, 1)
	var head string
	for _, h := range heads {
		head = h
	}
	for _, b := range []string{"main", "Main", "release/2"} {
		require.ErrorIs(t, m.Push(ctx, b, head), ErrBranchProtected, b)
	}
	require.ErrorIs(t, m.DeleteBranch(ctx, "main", repo.base), ErrBranchProtected)
	require.Equal(t, repo.base, gitT(t, repo.remote, "rev-parse", "refs/heads/main"), "the remote's main never moves")
	_, err := gitTry(repo.remote, "rev-parse", "--verify", "refs/heads/release/2")
	require.Error(t, err, "nothing pushed to release/2")
	require.NoError(t, m.Push(ctx, "drover/wf/T0", head), "a branch under the prefix is pushed")
}

// TestValidateBranchPolicy: the prefix, the patterns and the template are
// checked at config load, each error naming its field.
func TestValidateBranchPolicy(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		edit  func(*Config)
		field string // "": valid
	}{
		{"defaults", func(*Config) {}, ""},
		{"own prefix and template", func(c *Config) { c.BranchPrefix, c.BranchTemplate = "bots/", "bots/{workflow}/{task}" }, ""},
		{"template outside the prefix", func(c *Config) { c.BranchTemplate = "feature/{task}" }, "workspace.branch_template"},
		{"template that starts with a placeholder", func(c *Config) { c.BranchPrefix, c.BranchTemplate = "w/", "{workflow}/{task}" }, "workspace.branch_template"},
		{"prefix without a slash", func(c *Config) { c.BranchPrefix = "drover" }, "workspace.branch_prefix"},
		{"prefix with a wildcard", func(c *Config) { c.BranchPrefix = "a*/" }, "workspace.branch_prefix"},
		{"bad allowed pattern", func(c *Config) { c.AllowedBranches = []string{"feat/["} }, "workspace.allowed_branches[0]"},
		{"empty protected pattern", func(c *Config) { c.ProtectedBranches = []string{"x", ""} }, "workspace.protected_branches[1]"},
	} {
		c := Config{Repo: "https://example.invalid/r.git", Dir: filepath.Join(t.TempDir(), "ws")}
		tc.edit(&c)
		err := c.Validate()
		if tc.field == "" {
			require.NoError(t, err, tc.name)
			require.NotEmpty(t, c.BranchPrefix, tc.name)
			continue
		}
		require.ErrorIs(t, err, ErrInvalidConfig, tc.name)
		require.Contains(t, err.Error(), tc.field, tc.name)
	}
}
