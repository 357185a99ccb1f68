package worker_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// An agent's output that is valid JSON but not UTF-8 (raw bytes inside a
// string, as a CLI in another encoding prints them) is recorded as UTF-8,
// each invalid run of bytes as U+FFFD, in the role's event and in the
// cache: the audit stream is read forever, by consumers that require it.
func TestAgentOutputIsRecordedAsUTF8(t *testing.T) {
	nc, js := natstest.Connect(t, natstest.Server(t, natstest.Sync(time.Second)).ClientURL())
	names := subjects.MustNames(subjects.DefaultPrefix)

	rs := runner.SimSet(runner.NewSim(runner.SimOptions{}))
	rs.Planner = runner.Func{ID: "latin1-planner", InCaller: true, F: func(context.Context, runner.Request) (runner.Result, error) {
		return runner.Result{Output: []byte("{\"plan\":\"caf\xe9 cr\xe8me \xff\xfe\"}"), Action: "plan"}, nil
	}}
	w, err := worker.New(nc, worker.Config{
		Concurrency: 2, Runners: rs, FetchWait: 200 * time.Millisecond, Log: natstest.Quiet(),
	})
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	wctx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	defer func() { stop(); require.NoError(t, natstest.Recv(t, done, 30*time.Second)) }()
	select {
	case <-w.Started():
	case err := <-done:
		t.Fatalf("worker stopped at start: %v", err)
	}

	after, err := producer.AuditLastSeq(ctx, js, names)
	require.NoError(t, err)
	_, err = producer.Publish(ctx, js, names, subjects.DefaultQueue, subjects.TaskRequest{Workflow: "wf-utf8", ID: "T1", Scope: "s"})
	require.NoError(t, err)
	var end subjects.EventType
	require.NoError(t, producer.FollowTerminal(ctx, js, names, "wf-utf8", after, func(tm producer.Terminal) bool {
		end = tm.Event.EventType
		return false
	}))
	require.Equal(t, subjects.EventTaskCompleted, end)

	audit, err := js.Stream(ctx, names.AuditStream())
	require.NoError(t, err)
	m, err := audit.GetLastMsgForSubject(ctx, names.AuditSubject("wf-utf8", "T1", subjects.ActorOf(subjects.RolePlanner), subjects.EventPlannerDecision))
	require.NoError(t, err)
	require.True(t, utf8.Valid(m.Data), "the event's body is UTF-8: %q", m.Data)
	var ev subjects.AuditEvent
	require.NoError(t, json.Unmarshal(m.Data, &ev))
	require.Equal(t, `{"plan":"caf`+"\uFFFD"+` cr`+"\uFFFD"+`me `+"\uFFFD"+`"}`, string(ev.Output))

	cacheKV, err := js.KeyValue(ctx, names.CacheBucket())
	require.NoError(t, err)
	keys, err := cacheKV.ListKeys(ctx)
	require.NoError(t, err)
	found := false
	for k := range keys.Keys() {
		if !strings.HasPrefix(k, "planner.") {
			continue
		}
		e, err := cacheKV.Get(ctx, k)
		require.NoError(t, err)
		require.True(t, utf8.Valid(e.Value()), "the cached result is UTF-8: %q", e.Value())
		found = true
	}
	require.True(t, found, "the planner's result is cached")
}
