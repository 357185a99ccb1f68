package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// drover gc prints what it keeps and removes; --dry-run removes nothing.
// Entries just written are within every retention, so the run keeps them.
func TestGcCommand(t *testing.T) {
	t.Parallel()
	srv, _, _, res := natstest.Provisioned(t, natstest.Sync(time.Minute))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for key, st := range map[string]subjects.TaskState{
		subjects.StateKey("wf", "done"): {State: subjects.StateCompleted},
		subjects.StateKey("wf", "busy"): {State: subjects.StateRunning},
	} {
		body, err := json.Marshal(st)
		require.NoError(t, err)
		_, err = res.State.Put(ctx, key, body)
		require.NoError(t, err)
	}
	code, out, errOut := runCLI(t, "gc", "--dry-run", "--nats-url", srv.ClientURL())
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `kept\s+task\s+wf\.busy\s+0s old\s+open \(running\)`, out)
	require.Regexp(t, `kept\s+task\s+wf\.done\s+0s old\s+completed, within the state retention`, out)
	require.Contains(t, out, "would remove: 0 task keys, 0 workflow keys, 0 blobs")

	code, _, errOut = runCLI(t, "gc", "--nats-url", srv.ClientURL(), "--blob-max-age", "1m")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "blob max age 1m0s is shorter than 2h0m0s")
}
