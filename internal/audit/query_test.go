package audit_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// rdNames are the names the read-side tests use.
var rdNames = subjects.MustNames(subjects.DefaultPrefix)

// rdSync is nats-server's own default fsync interval, which the read-side
// tests' servers use.
var rdSync = natstest.Sync(2 * time.Minute)

// rdServer starts an embedded JetStream server with the audit stream and
// returns a JetStream client on it; everything stops with the test.
func rdServer(tb testing.TB, allowDirect bool) jetstream.JetStream {
	tb.Helper()
	_, js := natstest.Connect(tb, natstest.Server(tb, rdSync).ClientURL())
	_, err := js.CreateStream(context.Background(), jetstream.StreamConfig{
		Name: rdNames.AuditStream(), Subjects: []string{rdNames.AuditWildcard()},
		Storage: jetstream.FileStorage, DenyDelete: true, DenyPurge: true, AllowDirect: allowDirect,
	})
	require.NoError(tb, err)
	return js
}

// rdEvent builds an event the way a worker does.
func rdEvent(wf, task string, attempt int, actor subjects.Actor, et subjects.EventType, n uint64, at time.Time) subjects.AuditEvent {
	ev := subjects.AuditEvent{
		EventID: subjects.EventID(wf, task, attempt, actor, et, n), EventType: et, WorkflowID: wf, TaskID: task,
		Actor: actor, Attempt: attempt, Timestamp: at, Status: subjects.StatusSuccess, Worker: "test",
	}
	ev.Normalize()
	return ev
}

// rdPublish stores ev on its subject with its event ID as Nats-Msg-Id.
func rdPublish(tb testing.TB, js jetstream.JetStream, ev subjects.AuditEvent) {
	tb.Helper()
	body, err := json.Marshal(ev)
	require.NoError(tb, err)
	msg := nats.NewMsg(rdNames.AuditSubject(ev.WorkflowID, ev.TaskID, ev.Actor, ev.EventType))
	msg.Header.Set(subjects.HeaderMsgID, ev.EventID)
	msg.Header.Set(subjects.HeaderContract, subjects.ContractVersion)
	msg.Data = body
	_, err = js.PublishMsg(context.Background(), msg)
	require.NoError(tb, err)
}

// rdCollect replays q and returns what it delivered.
func rdCollect(t *testing.T, js jetstream.JetStream, q audit.Query) []audit.Record {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var got []audit.Record
	require.NoError(t, audit.Replay(ctx, js, rdNames, q, func(r audit.Record) error {
		got = append(got, r)
		return nil
	}))
	return got
}

// IDs with escapes and a would-be wildcard, to show the filters are exact.
const (
	rdWfA = "board/T1"
	rdWfB = "w*2"
)

// rdFixture publishes events of two workflows and returns them in stream
// order, with before[i] taken just before event i was published.
func rdFixture(t *testing.T, js jetstream.JetStream) (evs []subjects.AuditEvent, before []time.Time) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	sys, pl, im, ju := subjects.ActorSystem, subjects.Actor("planner"), subjects.Actor("implementer"), subjects.Actor("judge")
	type e struct {
		wf, task string
		att      int
		actor    subjects.Actor
		et       subjects.EventType
		n        uint64
	}
	for i, f := range []e{
		{rdWfA, "T1.1", 1, sys, subjects.EventTaskAccepted, 0},
		{rdWfA, "T1.1", 1, pl, subjects.EventPlannerDecision, 0},
		{rdWfB, "T1.1", 1, sys, subjects.EventTaskAccepted, 0},
		{rdWfA, "T2", 1, sys, subjects.EventTaskAccepted, 0},
		{rdWfA, "T1.1", 1, im, subjects.EventImplementerChange, 0},
		{rdWfB, "T1.1", 1, pl, subjects.EventPlannerDecision, 0},
		{rdWfA, "T1.1", 1, ju, subjects.EventJudgeVerdict, 0},
		{rdWfA, "T2", 1, pl, subjects.EventPlannerDecision, 0},
		{rdWfA, "T1.1", 2, im, subjects.EventImplementerChange, 0},
		{rdWfB, "T1.1", 1, sys, subjects.EventTaskFailed, 0},
		{rdWfA, "T1.1", 2, ju, subjects.EventJudgeVerdict, 0},
		{rdWfA, "T1.1", 2, sys, subjects.EventTaskCompleted, 0},
		{rdWfA, subjects.Reserved, 0, sys, subjects.EventWorkflowPaused, 1},
		{rdWfA, "T2", 1, im, subjects.EventTaskRetried, 2},
	} {
		ev := rdEvent(f.wf, f.task, f.att, f.actor, f.et, f.n, t0.Add(time.Duration(i)*time.Second))
		before = append(before, time.Now())
		rdPublish(t, js, ev)
		evs = append(evs, ev)
	}
	return evs, before
}

// rdIDs returns the event IDs of evs that pass keep, or of records.
func rdIDs[T any](xs []T, keep func(T) bool, id func(T) string) []string {
	out := []string{}
	for _, x := range xs {
		if keep == nil || keep(x) {
			out = append(out, id(x))
		}
	}
	return out
}

func rdRecID(r audit.Record) string       { return r.Event.EventID }
func rdEvID(e subjects.AuditEvent) string { return e.EventID }

func TestReplayFilters(t *testing.T) {
	for _, direct := range []bool{false, true} {
		t.Run(fmt.Sprintf("allow_direct=%v", direct), func(t *testing.T) {
			js := rdServer(t, direct)
			evs, before := rdFixture(t, js)
			after := func(i int) func(subjects.AuditEvent) bool {
				return func(e subjects.AuditEvent) bool {
					return e.Timestamp.Sub(evs[0].Timestamp) >= time.Duration(i)*time.Second
				}
			}
			cases := []struct {
				name string
				q    audit.Query
				keep func(subjects.AuditEvent) bool
			}{
				{"workflow", audit.Query{Workflow: rdWfA}, func(e subjects.AuditEvent) bool { return e.WorkflowID == rdWfA }},
				{"task across workflows", audit.Query{Task: "T1.1"}, func(e subjects.AuditEvent) bool { return e.TaskID == "T1.1" }},
				{"workflow's own events", audit.Query{Workflow: rdWfA, Task: subjects.Reserved}, func(e subjects.AuditEvent) bool { return e.TaskID == subjects.Reserved }},
				{"actor", audit.Query{Actor: "judge"}, func(e subjects.AuditEvent) bool { return e.Actor == "judge" }},
				{"type", audit.Query{Type: subjects.EventTaskFailed}, func(e subjects.AuditEvent) bool { return e.EventType == subjects.EventTaskFailed }},
				{"workflow and actor", audit.Query{Workflow: rdWfA, Actor: "implementer"}, func(e subjects.AuditEvent) bool { return e.WorkflowID == rdWfA && e.Actor == "implementer" }},
				{"since", audit.Query{Since: before[4]}, after(4)},
				{"since and until", audit.Query{Since: before[4], Until: before[9].Add(-time.Nanosecond)}, func(e subjects.AuditEvent) bool { return after(4)(e) && !after(9)(e) }},
				{"workflow since", audit.Query{Workflow: rdWfB, Since: before[4]}, func(e subjects.AuditEvent) bool { return e.WorkflowID == rdWfB && after(4)(e) }},
				{"until", audit.Query{Until: before[3].Add(-time.Nanosecond)}, func(e subjects.AuditEvent) bool { return !after(3)(e) }},
				{"everything", audit.Query{}, nil},
				{"unknown workflow", audit.Query{Workflow: "w"}, func(subjects.AuditEvent) bool { return false }},
				{"since after the last", audit.Query{Since: time.Now().Add(time.Hour)}, func(subjects.AuditEvent) bool { return false }},
				{"until before since", audit.Query{Since: before[5], Until: before[2]}, func(subjects.AuditEvent) bool { return false }},
			}
			for _, c := range cases {
				t.Run(c.name, func(t *testing.T) {
					got := rdCollect(t, js, c.q) // a bounded replay ends by itself: rdCollect's deadline fails it otherwise
					require.Equal(t, rdIDs(evs, c.keep, rdEvID), rdIDs(got, nil, rdRecID))
					for _, r := range got {
						require.NoError(t, r.Err)
						require.Equal(t, r.Event.EventID, r.Headers.Get(subjects.HeaderMsgID))
						require.Equal(t, rdNames.AuditSubject(r.Event.WorkflowID, r.Event.TaskID, r.Event.Actor, r.Event.EventType), r.Subject)
					}
				})
			}
		})
	}
}

func TestReplayStopsAndCleansUp(t *testing.T) {
	js := rdServer(t, true)
	rdFixture(t, js)
	leaks := goleak.IgnoreCurrent()
	ctx := context.Background()

	// fn's error ends the replay and comes back as it is.
	errStop := errors.New("stop")
	n := 0
	err := audit.Replay(ctx, js, rdNames, audit.Query{Workflow: rdWfA}, func(audit.Record) error {
		if n++; n == 2 {
			return errStop
		}
		return nil
	})
	require.ErrorIs(t, err, errStop)
	require.Equal(t, 2, n)

	// An event stored during the replay is past its end, also when the
	// replay spans several pull batches (so the pending count sees it).
	const bulk = 700
	for i := range bulk {
		rdPublish(t, js, rdEvent("bulk", "T1", 1, subjects.ActorSystem, subjects.EventTaskRetried, uint64(i+1), time.Now()))
	}
	n = 0
	err = audit.Replay(ctx, js, rdNames, audit.Query{Workflow: "bulk"}, func(audit.Record) error {
		if n++; n == 1 {
			rdPublish(t, js, rdEvent("bulk", "T2", 1, subjects.ActorSystem, subjects.EventTaskAccepted, 0, time.Now()))
		}
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, bulk, n)

	// Ending ctx stops a bounded replay with ctx's error.
	cctx, cancel := context.WithCancel(ctx)
	err = audit.Replay(cctx, js, rdNames, audit.Query{Workflow: rdWfA}, func(audit.Record) error { cancel(); return nil })
	require.ErrorIs(t, err, context.Canceled)

	// A body that does not decode is delivered with Err, not skipped.
	_, err = js.Publish(ctx, rdNames.AuditSubject("broken", "T1", subjects.ActorSystem, subjects.EventTaskAccepted), []byte("{not json"))
	require.NoError(t, err)
	recs := rdCollect(t, js, audit.Query{Workflow: "broken"})
	require.Len(t, recs, 1)
	require.Error(t, recs[0].Err)

	// No consumer and no goroutine outlives a replay.
	stream, err := js.Stream(ctx, rdNames.AuditStream())
	require.NoError(t, err)
	require.Zero(t, stream.CachedInfo().State.Consumers)
	goleak.VerifyNone(t, leaks)
}

func TestReplayFollow(t *testing.T) {
	js := rdServer(t, false)
	evs, _ := rdFixture(t, js)
	leaks := goleak.IgnoreCurrent()
	for _, wf := range []string{rdWfB, "fresh"} {
		want := rdIDs(evs, func(e subjects.AuditEvent) bool { return e.WorkflowID == wf }, rdEvID)
		ctx, cancel := context.WithCancel(context.Background())
		recs := make(chan audit.Record, 100)
		done := make(chan error, 1)
		go func() {
			done <- audit.Replay(ctx, js, rdNames, audit.Query{Workflow: wf, Follow: true}, func(r audit.Record) error {
				recs <- r
				return nil
			})
		}()
		next := func() string {
			select {
			case r := <-recs:
				return r.Event.EventID
			case err := <-done:
				t.Fatalf("follow ended early: %v", err)
			case <-time.After(10 * time.Second):
				t.Fatal("follow delivered nothing")
			}
			return ""
		}
		for _, id := range want {
			require.Equal(t, id, next())
		}
		late := rdEvent(wf, "T9", 1, subjects.ActorSystem, subjects.EventTaskAccepted, 0, time.Now())
		rdPublish(t, js, late)
		require.Equal(t, late.EventID, next())
		cancel()
		select {
		case err := <-done:
			require.NoError(t, err, "a follower stopped by ctx ends cleanly")
		case <-time.After(10 * time.Second):
			t.Fatal("follow did not stop on cancel")
		}
	}
	stream, err := js.Stream(context.Background(), rdNames.AuditStream())
	require.NoError(t, err)
	require.Zero(t, stream.CachedInfo().State.Consumers)
	goleak.VerifyNone(t, leaks)
}
