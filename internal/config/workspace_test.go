package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// With a workspace repository, an exec implementer or judge without its
// own cache: is cached (its change is recorded and replayed; its key holds
// the base and the patch), an exec planner is not, an explicit cache:
// wins; without one every role keeps Role.Cached's answer.
func TestRoleCachedWithWorkspaces(t *testing.T) {
	t.Parallel()
	yes, no := true, false
	exec := func(cache *bool) Role {
		return Role{Runner: RunnerExec, Cache: cache, Exec: &Exec{Argv: []string{"agent"}}}
	}
	for _, tc := range []struct {
		name    string
		repo    string
		role    subjects.Role
		rc      Role
		want    bool
		wantWhy string
	}{
		{"exec implementer, workspace", "/r.git", subjects.RoleImplementer, exec(nil), true, "exec in a workspace: its change is recorded and replayed on a hit"},
		{"exec judge, workspace", "/r.git", subjects.RoleJudge, exec(nil), true, "exec in a workspace: the base and the patch it judges are in the key"},
		{"exec planner, workspace", "/r.git", subjects.RolePlanner, exec(nil), false, "exec planner runs outside the workspace (set cache: true if the agent is pure)"},
		{"cache: false wins", "/r.git", subjects.RoleImplementer, exec(&no), false, "cache: false"},
		{"cache: true wins", "", subjects.RoleImplementer, exec(&yes), true, "cache: true"},
		{"exec, no workspace", "", subjects.RoleImplementer, exec(nil), false, "exec without workspace (set cache: true if the agent is pure)"},
		{"sim, workspace", "/r.git", subjects.RoleImplementer, Role{Runner: RunnerSim}, true, "sim output is a function of the prompt"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var f File
			f.Workspace.Repo = tc.repo
			*f.Roles.For(tc.role) = tc.rc
			got, why := f.RoleCached(tc.role)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.wantWhy, why)
		})
	}
}
