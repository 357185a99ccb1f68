package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/subjects"
)

// BenchmarkReplayWorkflow replays one workflow's 100 events out of 100,000
// events of 1,000 workflows that ran at the same time (so each workflow's
// events are spread over the whole stream). "all" replays the whole stream,
// for contrast: the cost a replay without a server-side filter would pay.
func BenchmarkReplayWorkflow(b *testing.B) {
	const workflows, perWorkflow = 1000, 100
	js := rdServer(b, true)
	ctx := context.Background()
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	types := []struct {
		actor subjects.Actor
		et    subjects.EventType
	}{
		{subjects.ActorSystem, subjects.EventTaskAccepted}, {"planner", subjects.EventPlannerDecision},
		{"implementer", subjects.EventImplementerChange}, {"judge", subjects.EventJudgeVerdict},
		{subjects.ActorSystem, subjects.EventTaskCompleted},
	}
	for i := 0; i < workflows*perWorkflow; i++ {
		wf, k := fmt.Sprintf("wf-%04d", i%workflows), i/workflows
		ty := types[k%len(types)]
		ev := rdEvent(wf, fmt.Sprintf("T%d", k/len(types)), 1, ty.actor, ty.et, 0, t0.Add(time.Duration(i)*time.Millisecond))
		ev.Reasoning = "a sentence or two of reasoning, as a model would write it for the record"
		body, err := json.Marshal(ev)
		require.NoError(b, err)
		_, err = js.PublishAsync(rdNames.AuditSubject(ev.WorkflowID, ev.TaskID, ev.Actor, ev.EventType), body)
		require.NoError(b, err)
		if i%1000 == 999 { // stay below the client's limit of pending publishes
			select {
			case <-js.PublishAsyncComplete():
			case <-time.After(time.Minute):
				b.Fatal("publishing the events took too long")
			}
		}
	}
	stream, err := js.Stream(ctx, rdNames.AuditStream())
	require.NoError(b, err)
	require.Equal(b, uint64(workflows*perWorkflow), stream.CachedInfo().State.Msgs)

	run := func(q audit.Query, want int) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				n := 0
				err := audit.Replay(ctx, js, rdNames, q, func(audit.Record) error { n++; return nil })
				if err != nil || n != want {
					b.Fatalf("replay: %d events, error %v; want %d", n, err, want)
				}
			}
			b.ReportMetric(float64(want), "events/op")
		}
	}
	b.Run("one-workflow", run(audit.Query{Workflow: "wf-0500"}, perWorkflow))
	b.Run("one-task", run(audit.Query{Workflow: "wf-0500", Task: "T7"}, len(types)))
	b.Run("all", run(audit.Query{}, workflows*perWorkflow))
	stream, err = js.Stream(ctx, rdNames.AuditStream())
	require.NoError(b, err)
	require.Zero(b, stream.CachedInfo().State.Consumers, "replays left consumers behind")
}
