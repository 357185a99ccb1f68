package cli

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestBenchRefusesBadCounts(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"negative latency tasks", []string{"--latency-tasks", "-1"}, "must not be negative (got -1 and"},
		{"negative cached tasks", []string{"--cached-tasks", "-2"}, "must not be negative (got 200 and -2)"},
		{"negative agents", []string{"--agents", "-1"}, "--agents must be 0 to 20000 (got -1)"},
		{"too many agents", []string{"--agents", "20001"}, "--agents must be 0 to 20000 (got 20001)"},
		{"no workspace tasks", []string{"--workspace-tasks", "0"}, "--workspace-tasks must be positive (got 0)"},
		{"agents that do not wait", []string{"--agents", "5", "--agent-latency", "0s"}, "--agent-latency must be positive (got 0s)"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, _, errOut := runCLI(t, append([]string{"bench"}, tc.args...)...)
			require.Equal(t, 1, code)
			require.Contains(t, errOut, tc.want)
		})
	}
}

// A tiny bench run reports every phase: the Drover phase, the latency,
// cached and agents phases.
func TestBenchReportsEveryPhase(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("drover bench starts a NATS server: not run with -short")
	}
	code, out, errOut := runCLI(t, "bench", "--tasks", "10", "--concurrency", "2", "--latency-tasks", "2",
		"--cached-tasks", "3", "--agents", "4", "--agent-latency", "400ms", "--sync", "1s", "--json")
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Drover  struct{ Completed int } `json:"drover"`
		Latency struct {
			RoleGap struct{ N int } `json:"role_gap"`
		} `json:"latency"`
		Cached struct {
			Hits int `json:"hits"`
		} `json:"cached"`
		Agents struct {
			Completed int `json:"completed"`
			Peak      int `json:"peak"`
		} `json:"agents"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, 10, rep.Drover.Completed, "drover")
	require.Equal(t, 4, rep.Latency.RoleGap.N)
	require.Equal(t, 9, rep.Cached.Hits)
	require.Equal(t, 4, rep.Agents.Completed)
	require.Equal(t, 4, rep.Agents.Peak, "the four agents wait at once")
}
