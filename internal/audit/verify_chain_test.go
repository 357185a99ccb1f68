package audit_test

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/subjects"
)

// chainRecord runs a few tasks through a real worker (one rejected by its
// judge once, one whose implementer fails once, one submitted again after
// it finished, so a foreign task_rejected joins its subjects) and returns
// a client of that server once the record is complete.
func chainRecord(t *testing.T, ctx context.Context) jetstream.JetStream {
	t.Helper()
	js := vfWorker(t)
	reqs := []subjects.TaskRequest{
		vfTask("a", ""), vfTask("b", `{"judge_rejects":1}`), vfTask("c", `{"fail":{"role":"implementer","times":1}}`),
	}
	for _, r := range reqs {
		_, err := producer.Publish(ctx, js, rdNames, subjects.DefaultQueue, r)
		require.NoError(t, err)
	}
	vfWaitTerminals(t, ctx, js, len(reqs))
	dup, err := json.Marshal(reqs[0])
	require.NoError(t, err)
	msg := nats.NewMsg(rdNames.TaskSubject(subjects.DefaultQueue))
	msg.Header.Set(subjects.HeaderMsgID, "e2e/a/again")
	msg.Data = dup
	_, err = js.PublishMsg(ctx, msg)
	require.NoError(t, err)
	vfWaitTerminals(t, ctx, js, len(reqs)+1)
	return js
}

// copyAudit copies the first n events of src's audit stream, headers and
// all, into a fresh server's, through edit (which may change a message),
// as a store restored from a copy would hold them.
func copyAudit(t *testing.T, ctx context.Context, src jetstream.JetStream, n uint64, edit func(seq uint64, m *nats.Msg)) jetstream.JetStream {
	t.Helper()
	dst := vfProvision(t)
	s, err := src.Stream(ctx, rdNames.AuditStream())
	require.NoError(t, err)
	for seq := uint64(1); seq <= n; seq++ {
		raw, err := s.GetMsg(ctx, seq)
		require.NoError(t, err)
		m := &nats.Msg{Subject: raw.Subject, Header: raw.Header, Data: raw.Data}
		if edit != nil {
			edit(seq, m)
		}
		ack, err := dst.PublishMsg(ctx, m)
		require.NoError(t, err)
		require.Equal(t, seq, ack.Sequence)
	}
	return dst
}

// editReasoning rewrites an event's reasoning, keeping every other field,
// its event ID and its subject: an edit that keeps the record's structure.
func editReasoning(t *testing.T, m *nats.Msg) {
	t.Helper()
	var ev map[string]any
	require.NoError(t, json.Unmarshal(m.Data, &ev))
	ev["reasoning"] = "edited after the fact"
	b, err := json.Marshal(ev)
	require.NoError(t, err)
	m.Data = b
}

// lastSeqOf is the sequence of the first event of type et of task.
func seqOf(t *testing.T, ctx context.Context, js jetstream.JetStream, task string, et subjects.EventType) uint64 {
	t.Helper()
	s, err := js.Stream(ctx, rdNames.AuditStream())
	require.NoError(t, err)
	m, err := s.GetLastMsgForSubject(ctx, rdNames.AuditFilter("e2e", task, "", et))
	require.NoError(t, err)
	return m.Sequence
}

// Rows 14 and 24: every event carries the link of its task's previous one
// (Drover-Prev), so an edit that keeps the structure (a planner's reasoning
// rewritten in a restored copy) is named by verify at the task's next
// event, while the same copy unedited verifies clean.
func TestVerifyHashChainDetectsAnEdit(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := chainRecord(t, ctx)
	rep, err := audit.Verify(ctx, src, rdNames, audit.VerifyOptions{DLQ: false})
	require.NoError(t, err)
	require.True(t, rep.OK(), "violations: %v", rep.Violations)
	last := rep.LastSeq

	clean := copyAudit(t, ctx, src, last, nil)
	rep, err = audit.Verify(ctx, clean, rdNames, audit.VerifyOptions{})
	require.NoError(t, err)
	require.True(t, rep.OK(), "an unedited copy: %v", rep.Violations)

	for _, tc := range []struct {
		task string
		et   subjects.EventType
	}{
		{"b", subjects.EventPlannerDecision},
		{"a", subjects.EventTaskCompleted}, // followed by the duplicate's task_rejected
	} {
		t.Run(fmt.Sprintf("%s %s", tc.task, tc.et), func(t *testing.T) {
			edited := seqOf(t, ctx, src, tc.task, tc.et)
			dst := copyAudit(t, ctx, src, last, func(seq uint64, m *nats.Msg) {
				if seq == edited {
					editReasoning(t, m)
				}
			})
			rep, err := audit.Verify(ctx, dst, rdNames, audit.VerifyOptions{})
			require.NoError(t, err)
			require.Equal(t, 1, rep.ViolationCount, "violations: %v", rep.Violations)
			require.Equal(t, audit.RuleChain, rep.First.Rule)
			require.Greater(t, rep.First.Seq, edited, "named at the task's next event")
			require.Contains(t, rep.First.Detail, fmt.Sprintf("seq %d", edited))
		})
	}
}

// Row 14: a checkpoint taken of the stream (its last sequence and that
// event's link) makes verify report a rolled-back tail: a copy missing the
// last events, or holding another event at the checkpoint's sequence (a
// task's last event, which no later link covers).
func TestVerifyCheckpointDetectsARollback(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	src := chainRecord(t, ctx)
	cp, err := audit.TakeCheckpoint(ctx, src, rdNames)
	require.NoError(t, err)
	require.NotZero(t, cp.LastSeq)
	b, err := json.Marshal(cp)
	require.NoError(t, err)
	cp, err = audit.ParseCheckpoint(b)
	require.NoError(t, err)

	rep, err := audit.Verify(ctx, src, rdNames, audit.VerifyOptions{Checkpoint: &cp})
	require.NoError(t, err)
	require.True(t, rep.OK(), "the stream the checkpoint was taken of: %v", rep.Violations)
	require.Equal(t, cp.LastSeq, rep.CheckpointSeq)

	for _, tc := range []struct {
		name string
		n    uint64
		edit func(seq uint64, m *nats.Msg)
	}{
		{"tail rolled back", cp.LastSeq - 3, nil},
		{"last event rewritten", cp.LastSeq, func(seq uint64, m *nats.Msg) {
			if seq == cp.LastSeq {
				editReasoning(t, m)
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dst := copyAudit(t, ctx, src, tc.n, tc.edit)
			rep, err := audit.Verify(ctx, dst, rdNames, audit.VerifyOptions{Checkpoint: &cp})
			require.NoError(t, err)
			require.Equal(t, 1, rep.ViolationCount, "violations: %v", rep.Violations)
			require.Equal(t, audit.RuleRegression, rep.First.Rule, rep.First.Detail)
		})
	}
}
