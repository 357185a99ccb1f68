package tests

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// badInput is a request body the contract rejects, with the reason and the
// tokens its DLQ entry and task_rejected event must carry ("_": unreadable).
type badInput struct {
	name         string
	body         []byte
	reason       subjects.Reason
	wfTok, tkTok string
}

func badInputs() []badInput {
	deep := `{"workflow":"wf-rej","id":"deep","scope":"s","metadata":{"a":` + strings.Repeat("[", 40) + strings.Repeat("]", 40) + `}}`
	big := `{"workflow":"wf-rej","id":"big","scope":"` + strings.Repeat("x", 600<<10) + `"}`
	return []badInput{
		{"invalid JSON", []byte(`{"workflow":"wf-rej","id":"T1",`), subjects.ReasonInvalidJSON, "_", "_"},
		{"not an object", []byte(`["wf-rej","T1"]`), subjects.ReasonInvalidJSON, "_", "_"},
		{"missing scope", []byte(`{"workflow":"wf.rej","id":"T1.1"}`), subjects.ReasonMissingField, "wf=2Erej", "T1=2E1"},
		{"missing id", []byte(`{"workflow":"wf-rej","scope":"s"}`), subjects.ReasonMissingField, "wf-rej", "_"},
		{"max_attempts too high", []byte(`{"workflow":"wf-rej","id":"ma","scope":"s","max_attempts":11}`), subjects.ReasonInvalidValue, "wf-rej", "ma"},
		{"max_attempts a string", []byte(`{"workflow":"wf-rej","id":"ms","scope":"s","max_attempts":"3"}`), subjects.ReasonInvalidValue, "wf-rej", "ms"},
		{"id with white space", []byte(`{"workflow":"wf-rej","id":"has space","scope":"s"}`), subjects.ReasonInvalidValue, "wf-rej", "_"},
		{"too large", []byte(big), subjects.ReasonTooLarge, "_", "_"},
		{"duplicate keys", []byte(`{"workflow":"wf-rej","id":"d1","id":"d2","scope":"s"}`), subjects.ReasonInvalidJSON, "_", "_"},
		{"case-variant keys", []byte(`{"Workflow":"wf-rej","ID":"cv","Scope":"s"}`), subjects.ReasonMissingField, "_", "_"},
		{"deep nesting", []byte(deep), subjects.ReasonInvalidJSON, "_", "_"},
		{"invalid UTF-8", []byte("{\"workflow\":\"wf-rej\",\"id\":\"u\",\"scope\":\"\xff\xfe\"}"), subjects.ReasonInvalidJSON, "_", "_"},
	}
}

// publishRaw publishes body to the default queue as it is, without a
// Nats-Msg-Id, and returns its stream sequence.
func (b *bundle) publishRaw(body []byte) uint64 {
	b.t.Helper()
	ack, err := b.js.PublishMsg(context.Background(), &nats.Msg{Subject: b.names.TaskSubject("default"), Data: body})
	require.NoError(b.t, err)
	return ack.Sequence
}

// errEnough stops a follow once it has what it waited for.
var errEnough = errors.New("enough")

// waitRejected follows task_rejected events until n have arrived, and
// returns them by the request's stream sequence.
func (b *bundle) waitRejected(n int) map[uint64]audit.Record {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	got := map[uint64]audit.Record{}
	q := audit.Query{Actor: subjects.ActorSystem, Type: subjects.EventTaskRejected, Follow: true}
	err := audit.Replay(ctx, b.js, b.names, q, func(r audit.Record) error {
		require.NoError(b.t, r.Err)
		i := strings.LastIndexByte(r.Event.EventID, '/')
		seq, err := strconv.ParseUint(r.Event.EventID[i+1:], 10, 64)
		require.NoError(b.t, err, r.Event.EventID)
		require.NotContains(b.t, got, seq, "second task_rejected for request %d", seq)
		got[seq] = r
		if len(got) == n {
			return errEnough
		}
		return nil
	})
	require.ErrorIs(b.t, err, errEnough, "waiting for %d task_rejected events, got %d", n, len(got))
	return got
}

// requireTasksDrained waits until the tasks stream holds nothing: the
// worker terminates a rejected request after writing its event.
func (b *bundle) requireTasksDrained() {
	b.t.Helper()
	ctx := context.Background()
	s, err := b.js.Stream(ctx, b.names.TasksStream())
	require.NoError(b.t, err)
	require.EventuallyWithT(b.t, func(c *assert.CollectT) {
		info, err := s.Info(ctx)
		if assert.NoError(c, err) {
			assert.Zero(c, info.State.Msgs)
		}
	}, 30*time.Second, 20*time.Millisecond, "tasks stream not empty")
}

// checkRejection asserts the task_rejected event and the DLQ entry of the
// request with stream sequence seq.
func checkRejection(t *testing.T, b *bundle, c badInput, seq uint64, r audit.Record, dlq *jetstream.RawStreamMsg) {
	t.Helper()
	seqStr := strconv.FormatUint(seq, 10)
	ev := r.Event
	require.Equal(t, subjects.EventTaskRejected, ev.EventType)
	require.Equal(t, subjects.ActorSystem, ev.Actor)
	require.Equal(t, string(c.reason), ev.Action)
	require.Equal(t, subjects.StatusFailure, ev.Status)
	require.NotEmpty(t, ev.Error)
	require.Zero(t, ev.Attempt)
	require.Equal(t, "drover.audit."+c.wfTok+"."+c.tkTok+".system.task_rejected", r.Subject)
	require.Equal(t, c.wfTok+"/"+c.tkTok+"/0/system/task_rejected/"+seqStr, ev.EventID)
	require.Equal(t, ev.EventID, r.Headers.Get(subjects.HeaderMsgID))
	require.Equal(t, "1", r.Headers.Get(subjects.HeaderContract))
	if c.wfTok == "_" {
		require.Equal(t, "_", ev.WorkflowID)
	}
	if c.tkTok == "_" {
		require.Equal(t, "_", ev.TaskID)
	}

	require.Equal(t, "drover.dlq.default", dlq.Subject)
	require.Equal(t, c.body, dlq.Data, "the DLQ body is the request byte for byte")
	h := dlq.Header
	require.Equal(t, string(c.reason), h.Get(subjects.HeaderReason))
	require.NotEmpty(t, h.Get(subjects.HeaderError))
	require.Equal(t, c.wfTok, h.Get(subjects.HeaderWorkflow))
	require.Equal(t, c.tkTok, h.Get(subjects.HeaderTask))
	require.Equal(t, seqStr, h.Get(subjects.HeaderStreamSeq))
	require.Equal(t, "1", h.Get(subjects.HeaderDeliveries))
	require.Equal(t, "dlq/default/"+seqStr, h.Get(subjects.HeaderMsgID))
	require.Equal(t, "1", h.Get(subjects.HeaderContract))
}

// dlqBySeq indexes DLQ entries by Drover-Stream-Seq, failing on a second
// entry for one request.
func dlqBySeq(t *testing.T, entries []*jetstream.RawStreamMsg) map[uint64]*jetstream.RawStreamMsg {
	t.Helper()
	out := map[uint64]*jetstream.RawStreamMsg{}
	for _, m := range entries {
		seq, err := strconv.ParseUint(m.Header.Get(subjects.HeaderStreamSeq), 10, 64)
		require.NoError(t, err)
		require.NotContains(t, out, seq, "second DLQ entry for request %d", seq)
		out[seq] = m
	}
	return out
}

func TestBadInputIsRejectedOnceAndKept(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 4)
	cases := badInputs()
	seqs := make([]uint64, len(cases))
	for i, c := range cases {
		seqs[i] = b.publishRaw(c.body)
	}
	rejected := b.waitRejected(len(cases))
	b.requireTasksDrained()
	dlq := dlqBySeq(t, b.dlq())
	require.Len(t, dlq, len(cases))
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r, ok := rejected[seqs[i]]
			require.True(t, ok, "no task_rejected for request %d", seqs[i])
			m, ok := dlq[seqs[i]]
			require.True(t, ok, "no DLQ entry for request %d", seqs[i])
			checkRejection(t, b, c, seqs[i], r, m)
		})
	}
	require.Zero(t, sim.TotalCalls(), "no role runs for a rejected request")
	// Nothing but the rejections was written.
	s, err := b.js.Stream(t.Context(), b.names.AuditStream())
	require.NoError(t, err)
	info, err := s.Info(t.Context())
	require.NoError(t, err)
	require.EqualValues(t, len(cases), info.State.Msgs)
	b.oracle()
}

func TestDuplicateIDOfFinishedTaskIsRejected(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 4)
	req := task("wf.dup", "T1.1")
	after := b.submit(req)
	require.Equal(t, subjects.EventTaskCompleted, b.waitTerminal("wf.dup", after, 1)["T1.1"].EventType)
	require.EqualValues(t, 3, sim.TotalCalls())

	// The same request again, published raw: no Nats-Msg-Id, so the
	// server's duplicate window does not catch it; the worker must.
	body := []byte(`{"workflow":"wf.dup","id":"T1.1","scope":"do it again"}`)
	seq := b.publishRaw(body)
	rejected := b.waitRejected(1)
	b.requireTasksDrained()
	dlq := dlqBySeq(t, b.dlq())
	require.Len(t, dlq, 1)
	c := badInput{body: body, reason: subjects.ReasonDuplicateID, wfTok: "wf=2Edup", tkTok: "T1=2E1"}
	checkRejection(t, b, c, seq, rejected[seq], dlq[seq])
	require.Equal(t, "wf.dup", rejected[seq].Event.WorkflowID)
	require.Equal(t, "T1.1", rejected[seq].Event.TaskID)
	require.EqualValues(t, 3, sim.TotalCalls(), "the duplicate ran no role")

	// The task keeps its one task_completed.
	completed := 0
	for _, ev := range b.events("wf.dup") {
		if ev.EventType == subjects.EventTaskCompleted {
			completed++
		}
	}
	require.Equal(t, 1, completed)
	b.oracle()
}

// Two requests for one task whose roles are all cache hits, published
// together without Nats-Msg-Id: both run their (deferred, write-free)
// plan concurrently; one creates the state and completes the task, the
// other finds the state there when it writes and is rejected as a
// duplicate. No role runs, no event twice.
func TestConcurrentDuplicatesOfACachedTask(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 4)
	body := func(wf string) []byte {
		return []byte(`{"workflow":"` + wf + `","id":"T1","scope":"do T1","verification":"check T1"}`)
	}
	b.publishRaw(body("wf.cold"))
	b.waitTerminal("wf.cold", 0, 1)
	calls := sim.TotalCalls()

	after := b.submit()
	b.publishRaw(body("wf.warm"))
	b.publishRaw(body("wf.warm"))
	b.waitRejected(1)
	b.waitTerminal("wf.warm", after, 2) // task_completed and task_rejected, in either order
	b.requireTasksDrained()
	require.Equal(t, calls, sim.TotalCalls(), "no role ran")
	count := map[subjects.EventType]int{}
	for _, ev := range b.events("wf.warm") {
		count[ev.EventType]++
	}
	require.Equal(t, map[subjects.EventType]int{subjects.EventTaskAccepted: 1, subjects.EventPlannerDecision: 1,
		subjects.EventImplementerChange: 1, subjects.EventJudgeVerdict: 1, subjects.EventTaskCompleted: 1,
		subjects.EventTaskRejected: 1}, count)
	b.oracle()
}
