package cache

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Under ScopeFleet the workflow stays out of the key (the key of every
// cache written so far); under ScopeWorkflow two workflows never share one.
func TestScopedKey(t *testing.T) {
	t.Parallel()
	req := func(wf string) runner.Request {
		return runner.Request{Role: subjects.RoleImplementer, Task: subjects.TaskRequest{ID: "T1", Workflow: wf, Scope: "s"}, Attempt: 1}
	}
	for _, tc := range []struct {
		scope      Scope
		sameAcross bool
	}{
		{ScopeFleet, true},
		{"", true},
		{ScopeWorkflow, false},
	} {
		a, b := ScopedKey(tc.scope, "exec/v1", req("wf-a")), ScopedKey(tc.scope, "exec/v1", req("wf-b"))
		require.Equal(t, tc.sameAcross, a == b, "scope %q", tc.scope)
		require.Equal(t, a, ScopedKey(tc.scope, "exec/v1", req("wf-a")), "stable")
		require.Equal(t, a, (&Cache{}).WithScope(tc.scope).Key("exec/v1", req("wf-a")))
	}
	require.Equal(t, Key("exec/v1", req("wf-a")), ScopedKey(ScopeFleet, "exec/v1", req("wf-a")))
	require.Equal(t, Key("exec/v1", req("wf-a")), (*Cache)(nil).Key("exec/v1", req("wf-a")))
}

func TestParseScope(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]Scope{"": ScopeFleet, "fleet": ScopeFleet, "workflow": ScopeWorkflow} {
		got, err := ParseScope(in)
		require.NoError(t, err)
		require.Equal(t, want, got)
	}
	_, err := ParseScope("tenant")
	require.ErrorContains(t, err, `"tenant"`)
}
