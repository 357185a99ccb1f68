package tests

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// The oracle is what every fault scenario ends on, once faults are healed
// and the system is quiescent (FAULT-MATRIX.md, oracle O):
//
//	(a) each task's run has exactly one task_completed, task_failed or
//	    task_cancelled; each refused request one task_rejected (the
//	    verifier's event IDs name the request's sequence, so a second one
//	    is a duplicate ID);
//	(b) no event ID appears twice;
//	(c) the tasks stream is empty and no consumer has anything pending;
//	(d) nothing was removed from the audit stream: FirstSeq 1, Msgs ==
//	    LastSeq, no deleted sequence;
//	(e) drover_state holds the run's outcome for every task that ran;
//	(f) one DLQ entry per failed task and per refused request, and no
//	    other;
//
// and `drover audit verify --dlq` (audit.Verify) finds nothing wrong and
// no open task in the record the test produced.

// taskRef names one task of one workflow.
type taskRef struct{ workflow, task string }

func (r taskRef) String() string { return r.workflow + "/" + r.task }

// record is what the oracle reads back after a scenario.
type record struct {
	events []subjects.AuditEvent
	audit  jetstream.StreamState
	// states holds each ran task's drover_state state ("" when missing).
	states map[taskRef]string
	dlq    int
}

// runOutcome maps a run's terminal event to its drover_state state.
var runOutcome = map[subjects.EventType]string{
	subjects.EventTaskCompleted: subjects.StateCompleted,
	subjects.EventTaskFailed:    subjects.StateFailed,
	subjects.EventTaskCancelled: subjects.StateCancelled,
}

// ranTasks returns the tasks that have an event other than task_rejected:
// the tasks that were run, as opposed to requests refused outright.
func ranTasks(evs []subjects.AuditEvent) []taskRef {
	seen := map[taskRef]bool{}
	var out []taskRef
	for _, ev := range evs {
		if ev.TaskID == "" || ev.TaskID == subjects.Reserved || ev.EventType == subjects.EventTaskRejected {
			continue
		}
		r := taskRef{ev.WorkflowID, ev.TaskID}
		if !seen[r] {
			seen[r] = true
			out = append(out, r)
		}
	}
	return out
}

// problems returns every oracle item (a), (b), (d), (e) and (f) that rec
// breaks, one line each; (c) and the verifier need the server.
func (rec record) problems() []string {
	var out []string
	ids := map[string]bool{}
	runEnds := map[taskRef][]subjects.EventType{}
	needDLQ := 0
	for _, ev := range rec.events {
		if ids[ev.EventID] {
			out = append(out, fmt.Sprintf("(b) event %s twice", ev.EventID))
		}
		ids[ev.EventID] = true
		if _, ok := runOutcome[ev.EventType]; ok {
			r := taskRef{ev.WorkflowID, ev.TaskID}
			runEnds[r] = append(runEnds[r], ev.EventType)
		}
		if ev.EventType == subjects.EventTaskFailed || ev.EventType == subjects.EventTaskRejected {
			needDLQ++
		}
	}
	for _, r := range ranTasks(rec.events) {
		ends := runEnds[r]
		if len(ends) != 1 {
			out = append(out, fmt.Sprintf("(a) task %s has %d run outcomes %v, want 1", r, len(ends), ends))
			continue
		}
		if got, want := rec.states[r], runOutcome[ends[0]]; got != want {
			out = append(out, fmt.Sprintf("(e) task %s: drover_state %q, its outcome is %s", r, got, ends[0]))
		}
	}
	if s := rec.audit; s.Msgs > 0 && (s.FirstSeq != 1 || s.Msgs != s.LastSeq || s.NumDeleted != 0) {
		out = append(out, fmt.Sprintf("(d) audit stream lost events: first seq %d, last seq %d, %d messages, %d deleted",
			s.FirstSeq, s.LastSeq, s.Msgs, s.NumDeleted))
	}
	if rec.dlq != needDLQ {
		out = append(out, fmt.Sprintf("(f) %d DLQ entries for %d failed tasks and refused requests", rec.dlq, needDLQ))
	}
	sort.Strings(out)
	return out
}

// oracle checks the full oracle O on the bundle's server: the tasks stream
// drained, the record read back and checked, and the verifier run over the
// whole audit stream with the DLQ cross-check.
func (b *bundle) oracle() {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	b.drained(ctx)
	rec := b.readRecord(ctx)
	require.Empty(b.t, rec.problems(), "oracle O")
	rep, err := audit.Verify(ctx, b.js, b.names, audit.VerifyOptions{DLQ: true, StreamCheck: broker.CheckAudit})
	require.NoError(b.t, err)
	require.True(b.t, rep.OK(), "audit verify: %v", rep.Violations)
	require.Zero(b.t, rep.Open, "audit verify: open tasks %v", rep.OpenTasks)
	require.True(b.t, rep.SeqChecked && rep.DLQChecked)
	require.EqualValues(b.t, len(rec.events), rep.Events, "the verifier read every event")
}

// drained waits for (c): the tasks stream empty and nothing pending on any
// of its consumers.
func (b *bundle) drained(ctx context.Context) {
	b.t.Helper()
	require.EventuallyWithT(b.t, func(c *assert.CollectT) {
		s, err := b.js.Stream(ctx, b.names.TasksStream())
		if !assert.NoError(c, err) {
			return
		}
		info, err := s.Info(ctx)
		if !assert.NoError(c, err) {
			return
		}
		assert.Zero(c, info.State.Msgs, "(c) messages in %s", b.names.TasksStream())
		lister := s.ListConsumers(ctx)
		for ci := range lister.Info() {
			assert.Zero(c, ci.NumAckPending, "(c) ack pending on %s", ci.Name)
			assert.Zero(c, ci.NumPending, "(c) pending on %s", ci.Name)
		}
		assert.NoError(c, lister.Err())
	}, 30*time.Second, 50*time.Millisecond, "(c) tasks stream not drained")
}

// readRecord reads the audit stream's events and state, each ran task's
// drover_state entry and the DLQ's size.
func (b *bundle) readRecord(ctx context.Context) record {
	b.t.Helper()
	rec := record{events: b.events(""), states: map[taskRef]string{}}
	s, err := b.js.Stream(ctx, b.names.AuditStream())
	require.NoError(b.t, err)
	info, err := s.Info(ctx)
	require.NoError(b.t, err)
	rec.audit = info.State
	kv, err := b.js.KeyValue(ctx, b.names.StateBucket())
	require.NoError(b.t, err)
	st := state.New(kv)
	for _, r := range ranTasks(rec.events) {
		got, err := st.GetTask(ctx, r.workflow, r.task)
		if errors.Is(err, state.ErrNotFound) {
			continue
		}
		require.NoError(b.t, err)
		rec.states[r] = got.State
	}
	d, err := b.js.Stream(ctx, b.names.DLQStream())
	require.NoError(b.t, err)
	dinfo, err := d.Info(ctx)
	require.NoError(b.t, err)
	rec.dlq = int(dinfo.State.Msgs)
	return rec
}

// The oracle's record check names each broken item.
func TestOracleProblems(t *testing.T) {
	t.Parallel()
	ev := func(id string, typ subjects.EventType, task string) subjects.AuditEvent {
		return subjects.AuditEvent{EventID: id, EventType: typ, WorkflowID: "wf", TaskID: task}
	}
	done := []subjects.AuditEvent{
		ev("a1", subjects.EventTaskAccepted, "A"),
		ev("a2", subjects.EventTaskCompleted, "A"),
		ev("b1", subjects.EventTaskAccepted, "B"),
		ev("b2", subjects.EventTaskFailed, "B"),
		ev("r1", subjects.EventTaskRejected, "A"), // a refused duplicate of A
		ev("r2", subjects.EventTaskRejected, ""),  // an unreadable request
	}
	intact := jetstream.StreamState{Msgs: 6, FirstSeq: 1, LastSeq: 6}
	states := map[taskRef]string{{"wf", "A"}: subjects.StateCompleted, {"wf", "B"}: subjects.StateFailed}
	with := func(f func(*record)) record {
		r := record{events: append([]subjects.AuditEvent(nil), done...), audit: intact, states: map[taskRef]string{}, dlq: 3}
		for k, v := range states {
			r.states[k] = v
		}
		f(&r)
		return r
	}
	cases := []struct {
		name string
		rec  record
		want []string
	}{
		{"clean", with(func(*record) {}), nil},
		{"event twice", with(func(r *record) { r.events = append(r.events, done[0]) }), []string{"(b) event a1 twice"}},
		{"second outcome", with(func(r *record) { r.events = append(r.events, ev("a3", subjects.EventTaskCancelled, "A")) }),
			[]string{"(a) task wf/A has 2 run outcomes [task_completed task_cancelled], want 1"}},
		{"no outcome", with(func(r *record) { r.events = append(r.events, ev("c1", subjects.EventTaskAccepted, "C")) }),
			[]string{"(a) task wf/C has 0 run outcomes [], want 1"}},
		{"first event removed", with(func(r *record) { r.audit = jetstream.StreamState{Msgs: 5, FirstSeq: 2, LastSeq: 6} }),
			[]string{"(d) audit stream lost events: first seq 2, last seq 6, 5 messages, 0 deleted"}},
		{"event deleted inside", with(func(r *record) { r.audit = jetstream.StreamState{Msgs: 5, FirstSeq: 1, LastSeq: 6, NumDeleted: 1} }),
			[]string{"(d) audit stream lost events: first seq 1, last seq 6, 5 messages, 1 deleted"}},
		{"state still running", with(func(r *record) { r.states[taskRef{"wf", "A"}] = subjects.StateRunning }),
			[]string{`(e) task wf/A: drover_state "running", its outcome is task_completed`}},
		{"state missing", with(func(r *record) { delete(r.states, taskRef{"wf", "B"}) }),
			[]string{`(e) task wf/B: drover_state "", its outcome is task_failed`}},
		{"DLQ entry missing", with(func(r *record) { r.dlq = 2 }), []string{"(f) 2 DLQ entries for 3 failed tasks and refused requests"}},
		{"DLQ entry extra", with(func(r *record) { r.dlq = 4 }), []string{"(f) 4 DLQ entries for 3 failed tasks and refused requests"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, c.rec.problems())
		})
	}
}
