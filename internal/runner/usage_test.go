package runner

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestAgentUsage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, out string
		want      map[string]any
	}{
		{"nothing reported", `{"verdict":"approve"}`, nil},
		{"an agent CLI's result object", `{"type":"result","result":"done","total_cost_usd":0.5,"usage":{"input_tokens":10,"output_tokens":20},"model":"m1"}`,
			map[string]any{"usage": map[string]any{"input_tokens": int64(10), "output_tokens": int64(20)}, "cost_usd": 0.5, "model": "m1"}},
		{"the answer and then the usage", "prose\n{\"change\":\"x\"}\n{\"usage\":{\"input_tokens\":7,\"output_tokens\":1}}",
			map[string]any{"usage": map[string]any{"input_tokens": int64(7), "output_tokens": int64(1)}}},
		{"the last report wins", `{"cost_usd":1} then {"cost_usd":2}`, map[string]any{"cost_usd": 2.0}},
		{"nonsense is dropped", `{"usage":{"input_tokens":-3,"output_tokens":"lots"},"total_cost_usd":-1}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			require.Equal(t, tc.want, agentUsage(context.Background(), []byte(tc.out)))
		})
	}
}

func TestExecRecordsAgentUsage(t *testing.T) {
	t.Parallel()
	e := newExec(t, subjects.RoleJudge, ExecConfig{Argv: []string{script(t, "usage.sh")}})
	req := simReq(t, subjects.RoleJudge, "")
	req.Plan, req.Change = json.RawMessage(`{"plan":"p"}`), json.RawMessage(`{"change":"c"}`)
	res, err := e.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, subjects.VerdictApprove, res.Action)
	require.Equal(t, map[string]any{"input_tokens": int64(1200), "output_tokens": int64(300)}, res.Metadata["usage"])
	require.Equal(t, 0.042, res.Metadata["cost_usd"])
	require.Equal(t, "claude-test", res.Metadata["model"])
}
