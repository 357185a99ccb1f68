//go:build unix

package runner

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// The stdin contract: every key of the task is present, also when the
// request left it empty.
func TestExecStdinTaskHasEveryKey(t *testing.T) {
	t.Parallel()
	e := newExec(t, subjects.RoleImplementer, ExecConfig{Argv: []string{script(t, "cat.sh")}})
	for name, task := range map[string]subjects.TaskRequest{
		"bare":          {ID: "T1", Workflow: "wf", Scope: "s"},
		"with metadata": {ID: "T1", Workflow: "wf", Scope: "s", Type: "bug", MaxAttempts: 2, Verification: "v", Metadata: map[string]json.RawMessage{"owner": json.RawMessage(`"a"`)}},
	} {
		req := Request{Role: subjects.RoleImplementer, Task: task, Attempt: 1}
		res, err := e.Run(context.Background(), req)
		require.NoError(t, err, name)
		var in map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(res.Output, &in), "cat.sh answers with its stdin")
		for _, k := range []string{"version", "role", "task", "attempt", "plan", "change", "feedback", "lessons", "prompt"} {
			require.Contains(t, in, k, name)
		}
		var got map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(in["task"], &got))
		for _, k := range []string{"id", "workflow", "scope", "verification", "type", "max_attempts", "metadata"} {
			require.Contains(t, got, k, "%s: task.%s", name, k)
		}
		var md map[string]any
		require.NoError(t, json.Unmarshal(got["metadata"], &md), "%s: metadata is an object", name)
		if name == "bare" {
			require.Empty(t, md)
			require.JSONEq(t, `""`, string(got["verification"]))
			require.JSONEq(t, `0`, string(got["max_attempts"]))
		} else {
			require.Equal(t, map[string]any{"owner": "a"}, md)
			require.JSONEq(t, `2`, string(got["max_attempts"]))
		}
	}
}
