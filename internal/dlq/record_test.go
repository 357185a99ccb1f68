package dlq

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

func TestDLQValidateActor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		actor string
		ok    bool
	}{
		{"console:alice", true},
		{"cli:bob@build-01", true},
		{"cli:zoë@host", true},
		{"", false},
		{strings.Repeat("a", MaxActorBytes), true},
		{strings.Repeat("a", MaxActorBytes+1), false},
		{"cli:a\nb", false},
		{"cli:\x1b[31mred", false},
		{"cli:\xff", false},
	}
	for _, tt := range tests {
		err := ValidateActor(tt.actor)
		if tt.ok {
			require.NoError(t, err, "%q", tt.actor)
		} else {
			require.ErrorIs(t, err, ErrBadActor, "%q", tt.actor)
		}
	}
}

func TestDLQRedrivenEvent(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 3, 4, 5, 6, 7, 0, time.FixedZone("x", 3600))
	p := Planned{Entry: Entry{Seq: 42, Reason: "max_attempts", Workflow: "wf.a", Task: "T1"},
		Request: subjects.TaskRequest{Workflow: "wf.a-redrive-1", ID: "T1"}}
	ev := RedrivenEvent(p, "console:alice", at)
	require.Equal(t, "wf=2Ea/T1/0/human/task_redriven/42", ev.EventID)
	require.Equal(t, subjects.EventTaskRedriven, ev.EventType)
	require.Equal(t, subjects.ActorHuman, ev.Actor)
	require.Equal(t, []any{"wf.a", "T1", 0, "redriven", subjects.StatusSuccess, at.UTC()},
		[]any{ev.WorkflowID, ev.TaskID, ev.Attempt, ev.Action, ev.Status, ev.Timestamp})
	require.JSONEq(t, `{"actor":"console:alice","dlq_seq":42,"new_workflow":"wf.a-redrive-1","reason":"max_attempts"}`, string(ev.Metadata))

	// IDs the entry could not name are "_".
	p.Entry.Workflow, p.Entry.Task = "", ""
	ev = RedrivenEvent(p, "cli:bob@h", at)
	require.Equal(t, "_/_/0/human/task_redriven/42", ev.EventID)
	require.Equal(t, []string{"_", "_"}, []string{ev.WorkflowID, ev.TaskID})
}

// redrivenEvents replays every task_redriven event of the deployment.
func redrivenEvents(t *testing.T, js jetstream.JetStream) []audit.Record {
	t.Helper()
	var got []audit.Record
	require.NoError(t, audit.Replay(t.Context(), js, names, audit.Query{Type: subjects.EventTaskRedriven}, func(r audit.Record) error {
		got = append(got, r)
		return nil
	}))
	return got
}

// TestDLQRedriveRecordsTheDecision redrives one entry: the task_redriven
// event is on the original task's subject, written before the request, and
// a repeated redrive of the entry, inside the duplicate window or after
// it, records it once.
func TestDLQRedriveRecordsTheDecision(t *testing.T) {
	t.Parallel()
	_, js := natstest.Connect(t, natstest.Server(t).ClientURL())
	natstest.Provision(t, t.Context(), js, broker.Settings{Names: names, DuplicateWindow: 100 * time.Millisecond})
	addEntry(t, js, "default", subjects.ReasonMaxAttempts, "wf.a", "T1")
	e, err := Get(t.Context(), js, names, 1)
	require.NoError(t, err)

	_, err = Redrive(t.Context(), js, names, []Entry{e}, RedriveOptions{})
	require.ErrorIs(t, err, ErrBadActor, "no actor, no redrive")
	require.Empty(t, redrivenEvents(t, js))

	subs, err := Redrive(t.Context(), js, names, []Entry{e}, RedriveOptions{Actor: "console:alice"})
	require.NoError(t, err)
	require.Len(t, subs, 1)
	got := redrivenEvents(t, js)
	require.Len(t, got, 1)
	require.Equal(t, "drover.audit.wf=2Ea.T1.human.task_redriven", got[0].Subject)
	require.Equal(t, "wf=2Ea/T1/0/human/task_redriven/1", got[0].Headers.Get(subjects.HeaderMsgID))
	require.NoError(t, got[0].Err)
	var md map[string]any
	require.NoError(t, json.Unmarshal(got[0].Event.Metadata, &md))
	require.Equal(t, map[string]any{"actor": "console:alice", "dlq_seq": float64(1), "new_workflow": "wf.a-redrive-1", "reason": "max_attempts"}, md)

	// The event was stored before the request.
	tasks, err := js.Stream(t.Context(), names.TasksStream())
	require.NoError(t, err)
	req, err := tasks.GetMsg(t.Context(), subs[0].Seq)
	require.NoError(t, err)
	require.True(t, got[0].Time.Before(req.Time) || got[0].Time.Equal(req.Time))

	// Again at once: Nats-Msg-Id dedupes both the event and the request.
	_, err = Redrive(t.Context(), js, names, []Entry{e}, RedriveOptions{Actor: "console:alice"})
	require.NoError(t, err)
	require.Len(t, redrivenEvents(t, js), 1, "task_redriven events")

	// Again after the audit stream's duplicate window: still one event.
	waitDuplicateWindow(t, js)
	_, err = Redrive(t.Context(), js, names, []Entry{e}, RedriveOptions{Actor: "cli:bob@h"})
	require.NoError(t, err)
	require.Len(t, redrivenEvents(t, js), 1, "task_redriven events")

	// audit verify accepts the record.
	rep, err := audit.Verify(t.Context(), js, names, audit.VerifyOptions{})
	require.NoError(t, err)
	require.True(t, rep.OK(), "violations: %v", rep.Violations)
	require.Equal(t, 1, rep.Redriven)
}

// TestDLQRedriveRecordsBeforePublishing checks that the decision is in the
// audit stream even when the request's publish fails.
func TestDLQRedriveRecordsBeforePublishing(t *testing.T) {
	t.Parallel()
	js := server(t)
	addEntry(t, js, "default", subjects.ReasonRoleFailed, "wf", "T2")
	e, err := Get(t.Context(), js, names, 1)
	require.NoError(t, err)
	// Fail the request's publish: no stream takes it.
	require.NoError(t, js.DeleteStream(t.Context(), names.TasksStream()))
	subs, err := Redrive(t.Context(), js, names, []Entry{e}, RedriveOptions{Actor: "cli:bob@h"})
	require.Error(t, err)
	require.Empty(t, subs)
	got := redrivenEvents(t, js)
	require.Len(t, got, 1)
	require.Equal(t, "wf/T2/0/human/task_redriven/1", got[0].Event.EventID)
}

// waitDuplicateWindow waits until the duplicate window (the same for the
// audit and lessons streams) passed for everything stored so far: a probe
// stored on the lessons stream now is stored again once it is over.
func waitDuplicateWindow(t *testing.T, js jetstream.JetStream) {
	t.Helper()
	probe := func() (bool, error) {
		msg := nats.NewMsg(names.LessonsSubject("probe"))
		msg.Header.Set(subjects.HeaderMsgID, "probe")
		msg.Data = []byte(`{}`)
		ack, err := js.PublishMsg(context.Background(), msg)
		if err != nil {
			return false, err
		}
		return !ack.Duplicate, nil
	}
	first, err := probe()
	require.NoError(t, err)
	require.True(t, first)
	assert.Eventually(t, func() bool {
		stored, err := probe()
		return err == nil && stored
	}, 10*time.Second, 20*time.Millisecond, "the duplicate window did not pass")
}
