package pipeline

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestSessionOf(t *testing.T) {
	t.Parallel()
	ref := json.RawMessage(`{"blob":"` + sha64 + `","bytes":12,"truncated":true,"head":""}`)
	var decoded map[string]any
	require.NoError(t, json.Unmarshal(ref, &decoded))
	for _, tc := range []struct {
		name string
		md   map[string]any
		want *subjects.AgentSession
	}{
		{"no metadata", nil, nil},
		{"not an agent", map[string]any{"session_id": "s1"}, nil},
		{"no session", map[string]any{"agent": "claude-code"}, nil},
		{"not kept", map[string]any{"agent": "codex", "session_id": "t1"}, &subjects.AgentSession{Agent: "codex", ID: "t1"}},
		{"kept, this run's", map[string]any{"agent": "claude-code", "session_id": "s1", "session_state": ref, "session_cost_usd": 0.25},
			&subjects.AgentSession{Agent: "claude-code", ID: "s1", State: ref, CostUSD: 0.25}},
		{"codex, this run's usage", map[string]any{"agent": "codex", "session_id": "t1", "session_state": ref,
			"session_usage": map[string]any{"input_tokens": int64(3000), "cache_read_input_tokens": int64(1400), "output_tokens": int64(150)}},
			&subjects.AgentSession{Agent: "codex", ID: "t1", State: ref, InputTokens: 3000, CacheReadTokens: 1400, OutputTokens: 150}},
		{"codex, decoded usage", map[string]any{"agent": "codex", "session_id": "t1",
			"session_usage": map[string]any{"input_tokens": float64(3000), "output_tokens": -1.0, "cache_read_input_tokens": "x"}},
			&subjects.AgentSession{Agent: "codex", ID: "t1", InputTokens: 3000}},
		{"kept, from the cache", map[string]any{"agent": "claude-code", "session_id": "s1", "session_state": decoded},
			&subjects.AgentSession{Agent: "claude-code", ID: "s1", State: json.RawMessage(`{"blob":"` + sha64 + `","bytes":12,"head":"","truncated":true}`)}},
	} {
		require.Equal(t, tc.want, sessionOf(tc.md), tc.name)
	}
}

const sha64 = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
