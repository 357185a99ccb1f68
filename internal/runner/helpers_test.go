package runner

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// simReq builds a request for role with the given metadata.sim JSON ("" for
// none).
func simReq(t *testing.T, role subjects.Role, sim string) Request {
	t.Helper()
	task := subjects.TaskRequest{
		ID: "T1.1", Workflow: "wf-1", Scope: "Implement the audit logger",
		Verification: "Audit log persists across restarts", Type: "feature", MaxAttempts: 3,
	}
	if sim != "" {
		require.True(t, json.Valid([]byte(sim)), "bad sim JSON in test")
		task.Metadata = map[string]json.RawMessage{"sim": json.RawMessage(sim)}
	}
	return Request{Role: role, Task: task, Attempt: 1, Try: 1}
}

// sessionFigures are a rejected-then-approved task's model calls and
// tokens, for the session figures the real-agent tests log.
type sessionFigures struct {
	calls              int
	fresh, cached, out int64
}

// logSessionFigures logs kept's and cold's calls, tokens and money at
// the prices given (USD a million tokens): as billed, with cached input
// at its own price, and as drover cost prices it, all input at the
// input price.
func logSessionFigures(t *testing.T, kept, cold sessionFigures, input, cachedInput, output float64) {
	t.Helper()
	for _, row := range []struct {
		name string
		f    sessionFigures
	}{{"sessions kept", kept}, {"cold restart", cold}} {
		f := row.f
		t.Logf("%-13s: %d model calls, input %d fresh + %d cached, output %d, $%.5f billed, $%.5f in drover cost",
			row.name, f.calls, f.fresh, f.cached, f.out,
			(float64(f.fresh)*input+float64(f.cached)*cachedInput+float64(f.out)*output)/1e6,
			(float64(f.fresh+f.cached)*input+float64(f.out)*output)/1e6)
	}
}
