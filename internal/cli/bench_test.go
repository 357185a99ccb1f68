package cli

import (
	"encoding/json"
	"os"
	"path/filepath"
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
		{"no rounds", []string{"--rounds", "0"}, "--rounds must be at least 1 (got 0)"},
		{"negative agents", []string{"--agents", "-1"}, "--agents must be 0 to 20000 (got -1)"},
		{"too many agents", []string{"--agents", "20001"}, "--agents must be 0 to 20000 (got 20001)"},
		{"agents that do not wait", []string{"--agents", "5", "--agent-latency", "0s"}, "--agent-latency must be positive (got 0s)"},
		{"a profile that cannot be written", []string{"--memprofile", "no-such-dir/mem.prof"}, "--memprofile: open no-such-dir/mem.prof"},
		{"a profile directory that does not exist", []string{"--profile-dir", "no-such-dir"}, "--profile-dir: stat no-such-dir: no such file or directory"},
		{"a profile directory that is a file", []string{"--profile-dir", "bench_test.go"}, "--profile-dir bench_test.go: not a directory"},
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

// A tiny bench run reports every phase: the floor, contract-ops, the
// minimal worker, the latency, cached and agents phases; and profiles the
// first round's phases.
func TestBenchReportsEveryPhase(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("drover bench starts a NATS server: not run with -short")
	}
	profiles := t.TempDir()
	code, out, errOut := runCLI(t, "bench", "--tasks", "10", "--concurrency", "2", "--latency-tasks", "2",
		"--cached-tasks", "3", "--agents", "4", "--agent-latency", "400ms", "--sync", "1s", "--rounds", "2", "--json", "--profile-dir", profiles)
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Drover          struct{ Completed int } `json:"drover"`
		FloorOverlapped struct{ Completed int } `json:"floor_overlapped"`
		Minimal         struct{ Completed int } `json:"minimal_worker"`
		OpsOverlapped   struct {
			Completed int
			Ops       []struct{ Op string } `json:"ops"`
		} `json:"contract_ops_overlapped"`
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
		Spread struct {
			Rounds int `json:"rounds"`
			Ops    struct {
				Lo         float64 `json:"ci_lo"`
				Hi         float64 `json:"ci_hi"`
				Confidence float64 `json:"ci_confidence"`
			} `json:"drover_of_contract_ops_overlapped"`
		} `json:"round_spread"`
		Rounds []struct {
			Ratio  float64 `json:"drover_of_contract_ops_overlapped_pct"`
			Median bool    `json:"median"`
		} `json:"rounds"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	for name, n := range map[string]int{"drover": rep.Drover.Completed, "floor": rep.FloorOverlapped.Completed,
		"contract-ops": rep.OpsOverlapped.Completed, "minimal worker": rep.Minimal.Completed} {
		require.Equal(t, 10, n, name)
	}
	require.NotEmpty(t, rep.OpsOverlapped.Ops)
	require.Equal(t, 4, rep.Latency.RoleGap.N)
	require.Equal(t, 9, rep.Cached.Hits)
	require.Equal(t, 4, rep.Agents.Completed)
	require.Equal(t, 4, rep.Agents.Peak, "the four agents wait at once")
	require.Len(t, rep.Rounds, 2, "each round's ratios are listed")
	require.NotEqual(t, rep.Rounds[0].Median, rep.Rounds[1].Median, "one round is the median")
	require.Equal(t, 2, rep.Spread.Rounds, "the ratios' spread over the rounds")
	require.LessOrEqual(t, rep.Spread.Ops.Lo, rep.Spread.Ops.Hi)
	require.InDelta(t, 0.5, rep.Spread.Ops.Confidence, 1e-12, "two rounds' range holds the median half the time")

	for _, name := range []string{"drover", "contract-ops-overlapped", "minimal-worker", "floor-overlapped", "contract-ops-fully-cached"} {
		fi, err := os.Stat(filepath.Join(profiles, name+".pprof"))
		require.NoError(t, err, "a CPU profile of the %s phase", name)
		require.Positive(t, fi.Size(), name)
	}
}
