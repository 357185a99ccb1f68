package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var names = subjects.MustNames("drover")

func header(kv ...string) nats.Header {
	h := nats.Header{}
	for i := 0; i < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func TestDLQNewEntryDecodesHeaders(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	h := header(subjects.HeaderReason, "max_attempts", subjects.HeaderError, "judge said no",
		subjects.HeaderWorkflow, "board=2ET1", subjects.HeaderTask, "_",
		subjects.HeaderStreamSeq, "42", subjects.HeaderDeliveries, "3")
	e := newEntry(subjects.MustNames("team-a"), 7, "team-a.dlq.fast", at, h, []byte(`{}`))
	require.Equal(t, Entry{Seq: 7, Time: at, Queue: "fast", Reason: "max_attempts", Error: "judge said no",
		Workflow: "board.T1", Task: "", StreamSeq: 42, Deliveries: 3, Body: []byte(`{}`), Header: h}, e)
	require.Equal(t, "board.T1/_", e.Ref())

	// Headers that do not parse leave zero values; a bad token stays as it is.
	e = newEntry(names, 1, "drover.dlq.default", at, header(subjects.HeaderWorkflow, "a=2e", subjects.HeaderStreamSeq, "x"), nil)
	require.Equal(t, "a=2e", e.Workflow)
	require.Zero(t, e.StreamSeq)
	require.Equal(t, "a=2e/_", e.Ref())
}

func TestDLQRedrivable(t *testing.T) {
	t.Parallel()
	for _, r := range subjects.Reasons {
		err := Redrivable(string(r))
		switch r {
		case subjects.ReasonInvalidJSON, subjects.ReasonMissingField, subjects.ReasonInvalidValue, subjects.ReasonTooLarge:
			require.ErrorIs(t, err, ErrNotRedrivable, r)
			require.ErrorContains(t, err, string(r))
		default:
			require.NoError(t, err, r)
		}
	}
	require.ErrorIs(t, Redrivable("bogus"), ErrNotRedrivable)
	require.ErrorContains(t, ValidateReason("bogus"), `reason "bogus" is not a DLQ reason; want one of invalid_json,`)
}

func TestDLQBaseWorkflow(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"wf": "wf", "wf-redrive-1": "wf", "wf-redrive-12": "wf", "wf-redrive-x": "wf-redrive-x",
		"wf-redrive-1-redrive-2": "wf-redrive-1", "-redrive-3": "-redrive-3",
	} {
		require.Equal(t, want, BaseWorkflow(in), in)
	}
}

func entry(seq uint64, reason subjects.Reason, body string) Entry {
	return Entry{Seq: seq, Queue: "default", Reason: string(reason), Body: []byte(body)}
}

func TestDLQPlanRefusesWholeBatchNamingEachEntry(t *testing.T) {
	t.Parallel()
	ok := `{"workflow":"wf","id":"T1","scope":"s"}`
	_, err := Plan(t.Context(), nil, names, []Entry{
		entry(1, subjects.ReasonMaxAttempts, ok),
		entry(2, subjects.ReasonInvalidJSON, `{"workflow":`),
		entry(3, subjects.ReasonTooLarge, ok),
		entry(4, subjects.ReasonRoleFailed, `{"workflow":"wf"}`),
	}, RedriveOptions{})
	require.ErrorIs(t, err, ErrNotRedrivable)
	require.ErrorContains(t, err, "dlq entry 2: cannot be redriven: the request was rejected as invalid_json")
	require.ErrorContains(t, err, "dlq entry 3: cannot be redriven: the request was rejected as too_large")
	require.ErrorContains(t, err, "dlq entry 4: cannot be redriven: its body no longer decodes: missing_field")
	require.NotContains(t, err.Error(), "dlq entry 1")

	_, err = Plan(t.Context(), nil, names, nil, RedriveOptions{Workflow: "has space"})
	require.ErrorContains(t, err, `workflow "has space"`)
	_, err = Plan(t.Context(), nil, names, nil, RedriveOptions{Queue: "Big"})
	require.ErrorIs(t, err, subjects.ErrInvalidQueue)
}

func TestDLQPlanToWorkflowKeepsTheRequest(t *testing.T) {
	t.Parallel()
	body := `{"workflow":"wf","id":"T1.1","scope":"s","max_attempts":1,"metadata":{"sim":{"judge_rejects":1}},"extra":true}`
	plan, err := Plan(t.Context(), nil, names, []Entry{entry(5, subjects.ReasonMaxAttempts, body)}, RedriveOptions{Workflow: "new", Queue: "q2"})
	require.NoError(t, err)
	require.Len(t, plan, 1)
	want, rej := subjects.DecodeTask([]byte(body), subjects.Limits{})
	require.Nil(t, rej)
	want.Workflow = "new"
	require.Equal(t, want, plan[0].Request)
	require.Equal(t, "q2", plan[0].Queue)

	// Two entries that would become the same task are refused.
	_, err = Plan(t.Context(), nil, names, []Entry{entry(5, subjects.ReasonMaxAttempts, body),
		entry(9, subjects.ReasonDuplicateID, body)}, RedriveOptions{Workflow: "new"})
	require.ErrorContains(t, err, "dlq entries 5 and 9 would both become task T1.1 of workflow new")
}

func TestDLQViewOfBody(t *testing.T) {
	t.Parallel()
	v := ViewOf(Entry{Body: []byte(`{"a":1}`)}, true)
	require.JSONEq(t, `{"a":1}`, string(v.Body))
	v = ViewOf(Entry{Body: []byte(`{"a":`)}, true)
	require.Equal(t, `"{\"a\":"`, string(v.Body))
	v = ViewOf(Entry{Body: []byte{0xff, 0x00}}, true)
	require.Nil(t, v.Body)
	require.Equal(t, []byte{0xff, 0x00}, v.BodyBase64)
	out, err := json.Marshal(ViewOf(Entry{Seq: 3, Body: []byte(`{}`)}, false))
	require.NoError(t, err)
	require.NotContains(t, string(out), "body")
}

// server starts an embedded server with Drover's streams and buckets.
func server(t *testing.T) jetstream.JetStream {
	t.Helper()
	_, _, js, _ := natstest.Provisioned(t)
	return js
}

func addEntry(t *testing.T, js jetstream.JetStream, queue string, reason subjects.Reason, wf, task string) {
	t.Helper()
	msg := &nats.Msg{Subject: names.DLQSubject(queue), Header: header(subjects.HeaderReason, string(reason),
		subjects.HeaderWorkflow, subjects.Token(wf), subjects.HeaderTask, subjects.Token(task))}
	msg.Data, _ = json.Marshal(map[string]string{"workflow": wf, "id": task, "scope": "s"})
	_, err := js.PublishMsg(t.Context(), msg)
	require.NoError(t, err)
}

func list(t *testing.T, js jetstream.JetStream, f Filter) []string {
	t.Helper()
	var got []string
	require.NoError(t, List(t.Context(), js, names, f, func(e Entry) error {
		got = append(got, strconv.FormatUint(e.Seq, 10)+":"+e.Queue+":"+e.Reason+":"+e.Ref())
		return nil
	}))
	return got
}

func TestDLQListFiltersAndStops(t *testing.T) {
	t.Parallel()
	js := server(t)
	require.Empty(t, list(t, js, Filter{}), "an empty stream returns at once")

	addEntry(t, js, "default", subjects.ReasonMaxAttempts, "wf.a", "T1")
	addEntry(t, js, "fast", subjects.ReasonRoleFailed, "wf.a", "T2")
	addEntry(t, js, "default", subjects.ReasonDuplicateID, "wf-b", "T1")
	require.Equal(t, []string{"1:default:max_attempts:wf.a/T1", "2:fast:role_failed:wf.a/T2", "3:default:duplicate_id:wf-b/T1"},
		list(t, js, Filter{}))
	require.Equal(t, []string{"1:default:max_attempts:wf.a/T1", "3:default:duplicate_id:wf-b/T1"}, list(t, js, Filter{Queue: "default"}))
	require.Equal(t, []string{"2:fast:role_failed:wf.a/T2"}, list(t, js, Filter{Reason: "role_failed"}))
	require.Equal(t, []string{"1:default:max_attempts:wf.a/T1", "2:fast:role_failed:wf.a/T2"}, list(t, js, Filter{Workflow: "wf.a"}))
	require.Equal(t, []string{"1:default:max_attempts:wf.a/T1"}, list(t, js, Filter{Limit: 1}))
	require.Empty(t, list(t, js, Filter{Queue: "slow"}))

	errStop := errors.New("stop")
	require.ErrorIs(t, List(t.Context(), js, names, Filter{}, func(Entry) error { return errStop }), errStop)
	require.ErrorContains(t, List(t.Context(), js, names, Filter{Reason: "nope"}, nil), `reason "nope" is not a DLQ reason`)

	e, err := Get(t.Context(), js, names, 2)
	require.NoError(t, err)
	require.Equal(t, "wf.a/T2", e.Ref())
	_, err = Get(t.Context(), js, names, 99)
	require.ErrorIs(t, err, ErrNotFound)

	// Select skips what cannot be redriven and keeps the newest of a task.
	addEntry(t, js, "default", subjects.ReasonInvalidJSON, "wf-b", "T9")
	addEntry(t, js, "default", subjects.ReasonMaxDeliveries, "wf-b-redrive-1", "T1")
	var skipped []uint64
	sel, err := Select(t.Context(), js, names, Filter{}, "", func(e Entry, _ error) { skipped = append(skipped, e.Seq) })
	require.NoError(t, err)
	require.Equal(t, []uint64{4, 3}, skipped)
	var seqs []uint64
	for _, e := range sel {
		seqs = append(seqs, e.Seq)
	}
	require.Equal(t, []uint64{1, 2, 5}, seqs)
}

func TestDLQNextWorkflowSkipsTakenNames(t *testing.T) {
	t.Parallel()
	js := server(t)
	ctx := context.Background()
	wf, err := nextWorkflow(ctx, js, names, "wf.a")
	require.NoError(t, err)
	require.Equal(t, "wf.a-redrive-1", wf)

	kv, err := js.KeyValue(ctx, names.StateBucket())
	require.NoError(t, err)
	_, err = kv.Put(ctx, subjects.StateKey("wf.a-redrive-1", "T1"), []byte(`{}`))
	require.NoError(t, err)
	_, err = kv.Put(ctx, subjects.StateKey("wf.a-redrive-10", "T1"), []byte(`{}`))
	require.NoError(t, err)
	wf, err = nextWorkflow(ctx, js, names, "wf.a")
	require.NoError(t, err)
	require.Equal(t, "wf.a-redrive-2", wf)
}
