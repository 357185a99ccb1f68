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
