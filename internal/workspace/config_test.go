package workspace

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := func(c *Config) {}
	tests := []struct {
		name  string
		edit  func(*Config)
		field string // "" = valid
	}{
		{"defaults", ok, ""},
		{"no dir", func(c *Config) { c.Dir = "" }, "workspace.dir"},
		{"repo option", func(c *Config) { c.Repo = "--upload-pack=evil" }, "workspace.repo"},
		{"base ref", func(c *Config) { c.BaseRef = "main~1" }, "workspace.base_ref"},
		{"template without task", func(c *Config) { c.BranchTemplate = "drover/{workflow}" }, "workspace.branch_template"},
		{"template invalid", func(c *Config) { c.BranchTemplate = "a..b/{task}" }, "workspace.branch_template"},
		{"setup empty argv", func(c *Config) { c.Setup = []Command{{}} }, "workspace.setup[0].argv"},
		{"cleanup negative timeout", func(c *Config) { c.Cleanup = []Command{{Argv: []string{"x"}, Timeout: -1}} }, "workspace.cleanup[0].timeout"},
		{"copy outside", func(c *Config) { c.CopyIgnored = []string{"../x"}; c.CopyFrom = "/src" }, "workspace.copy_ignored[0]"},
		{"copy absolute", func(c *Config) { c.CopyIgnored = []string{"/etc/passwd"}; c.CopyFrom = "/src" }, "workspace.copy_ignored[0]"},
		{"copy without source", func(c *Config) { c.Repo = "https://example.invalid/r.git"; c.CopyIgnored = []string{".env"} }, "workspace.copy_from"},
		{"push remote option", func(c *Config) { c.PushRemote = "-x" }, "workspace.push_remote"},
		{"negative batch", func(c *Config) { c.PushBatch = -1 }, "workspace.push_batch"},
		{"negative delay", func(c *Config) { c.PushDelay = -1 }, "workspace.push_delay"},
		{"negative max worktrees", func(c *Config) { c.MaxWorktrees = -1 }, "workspace.max_worktrees"},
		{"negative patch bound", func(c *Config) { c.MaxPatchBytes = -1 }, "workspace.max_patch_bytes"},
		{"negative git timeout", func(c *Config) { c.GitTimeout = -1 }, "workspace.git_timeout"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := Config{Repo: "/srv/repo.git", Dir: "/data/workspaces"}
			tc.edit(&c)
			err := c.Validate()
			if tc.field == "" {
				require.NoError(t, err)
				assert.Equal(t, DefaultBranchTemplate, c.BranchTemplate)
				assert.Equal(t, DefaultPushBatch, c.PushBatch)
				assert.Equal(t, DefaultPushDelay, c.PushDelay)
				assert.Equal(t, DefaultMaxPatchBytes, c.MaxPatchBytes)
				assert.Equal(t, DefaultGitTimeout, c.GitTimeout)
				assert.Equal(t, c.Repo, c.PushRemote)
				return
			}
			require.ErrorIs(t, err, ErrInvalidConfig)
			assert.Contains(t, err.Error(), tc.field+":")
		})
	}
	var off Config
	require.NoError(t, off.Validate())
	assert.False(t, off.Enabled())
	c := Config{Repo: "r", Dir: "d", Setup: []Command{{Argv: []string{"make"}}}}
	require.NoError(t, c.Validate())
	assert.Equal(t, DefaultCommandTimeout, c.Setup[0].Timeout)
	assert.True(t, strings.HasPrefix(c.Repo, "/"), "a local repo path is made absolute")
}

func TestEscapeRefAndBranch(t *testing.T) {
	t.Parallel()
	m := &Manager{cfg: Config{BranchTemplate: DefaultBranchTemplate}}
	tests := []struct{ workflow, task, requested, want string }{
		{"wf-1", "T1.3", "", "drover/wf-1/T1.3"},
		{"wf", "a/b", "", "drover/wf/a%2Fb"},
		{"wf", ".hidden", "", "drover/wf/%2Ehidden"},
		{"wf", "x..y", "", "drover/wf/x.%2Ey"},
		{"wf", "end.", "", "drover/wf/end%2E"},
		{"wf", "t.lock", "", "drover/wf/t%2Elock"},
		{"wf", "100%", "", "drover/wf/100%25"},
		{"wf", "é:~^", "", "drover/wf/%C3%A9%3A%7E%5E"},
		{"wf", "@{x}", "", "drover/wf/%40%7Bx%7D"},
		{"wf", "T1", "feature/login", "feature/login"},
	}
	seen := map[string]string{}
	for _, tc := range tests {
		got, err := m.Branch(tc.workflow, tc.task, tc.requested)
		require.NoError(t, err, tc.task)
		assert.Equal(t, tc.want, got)
		require.NoError(t, subjects.ValidBranch(got))
		if tc.requested == "" {
			prev, dup := seen[got]
			assert.False(t, dup, "%q and %q escape alike", prev, tc.task)
			seen[got] = tc.task
		}
	}
	_, err := m.Branch("wf", "T1", "bad..name")
	require.ErrorIs(t, err, subjects.ErrInvalidBranch)
}
