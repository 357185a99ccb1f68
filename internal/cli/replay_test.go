package cli

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/replay"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// drover replay re-runs a recorded workflow with no runner call and says
// so; a counterfactual needs a runner, and reports its verdicts.
func TestReplayCommand(t *testing.T) {
	t.Parallel()
	srv := natstest.Server(t, natstest.Sync(time.Minute))
	_, js := natstest.Connect(t, srv.ClientURL())
	names := subjects.MustNames(subjects.DefaultPrefix)
	wnc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(wnc.Close)
	w, err := worker.New(wnc, worker.Config{Concurrency: 4, Log: natstest.Quiet(), FetchWait: time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	<-w.Started()
	reqs := []subjects.TaskRequest{
		{Workflow: "wf", ID: "a", Scope: "do a"},
		{Workflow: "wf", ID: "b", Scope: "do b", Metadata: map[string]json.RawMessage{"sim": json.RawMessage(`{"judge_rejects":1}`)}},
	}
	for _, r := range reqs {
		_, err := producer.Publish(ctx, js, names, subjects.DefaultQueue, r)
		require.NoError(t, err)
	}
	n := 0
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	require.NoError(t, producer.FollowTerminal(wctx, js, names, "wf", 0, func(producer.Terminal) bool { n++; return n < 2 }))

	code, out, errOut := runCLI(t, "replay", "wf", "--as", "wf-again", "--nats-url", srv.ClientURL())
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "matching the record: 2 of 2; runner calls: 0")
	require.Regexp(t, `b\s+completed@2\s+completed@2\s+same\s+same\s+same`, out)

	code, _, errOut = runCLI(t, "replay", "wf", "--role", "judge", "--nats-url", srv.ClientURL())
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--role needs the new runner")

	code, out, errOut = runCLI(t, "replay", "wf", "--as", "wf-cf", "--role", "judge", "--prompts", t.TempDir(), "--json", "--nats-url", srv.ClientURL())
	require.Equal(t, 0, code, errOut)
	var rep replay.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, 3, rep.Summary.Compared) // a once, b twice
	require.InDelta(t, 1.0, rep.Summary.AgreementRate, 1e-9)
	require.EqualValues(t, 3, rep.LiveCalls)
}
