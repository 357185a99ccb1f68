package audit_test

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/subjects"
)

// rdSumEvents is a crafted workflow: T1 completes after a judge rejection,
// T2 fails, T3 is rejected, T4 still runs, T5 is cancelled, and T1 is
// submitted once more and rejected as a duplicate long after it completed.
// Redrives of T2's and T4's dead letters, and of T6's (whose own events are
// in another workflow), are no steps of any task.
func rdSumEvents() []subjects.AuditEvent {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	sys, pl, im, ju := subjects.ActorSystem, subjects.Actor("planner"), subjects.Actor("implementer"), subjects.Actor("judge")
	ev := func(task string, att int, actor subjects.Actor, et subjects.EventType, ms int, cached bool, action string) subjects.AuditEvent {
		e := rdEvent("w", task, att, actor, et, 0, at(ms))
		e.Cached, e.Action = cached, action
		return e
	}
	return []subjects.AuditEvent{
		ev(subjects.Reserved, 0, sys, subjects.EventWorkflowPaused, -5000, false, ""),
		ev("T1", 1, sys, subjects.EventTaskAccepted, 0, false, ""),
		ev("T1", 1, pl, subjects.EventPlannerDecision, 1000, true, ""),
		ev("T1", 1, im, subjects.EventImplementerChange, 2000, false, ""),
		ev("T1", 1, ju, subjects.EventJudgeVerdict, 3000, false, subjects.VerdictReject),
		ev("T1", 2, im, subjects.EventImplementerChange, 4000, false, ""),
		ev("T1", 2, ju, subjects.EventJudgeVerdict, 5000, true, subjects.VerdictApprove),
		ev("T1", 2, sys, subjects.EventTaskCompleted, 6000, false, ""),
		ev("T1", 0, sys, subjects.EventTaskRejected, 20000, false, string(subjects.ReasonDuplicateID)),
		ev("T2", 1, sys, subjects.EventTaskAccepted, 1000, false, ""),
		ev("T2", 1, pl, subjects.EventPlannerDecision, 2000, false, ""),
		ev("T2", 1, im, subjects.EventTaskRetried, 3000, false, ""),
		ev("T2", 1, sys, subjects.EventTaskFailed, 11000, false, string(subjects.ReasonMaxDeliveries)),
		ev("T3", 0, sys, subjects.EventTaskRejected, 500, false, string(subjects.ReasonInvalidValue)),
		ev("T4", 1, sys, subjects.EventTaskAccepted, 7000, false, ""),
		ev("T4", 1, pl, subjects.EventPlannerDecision, 8500, true, ""),
		ev("T5", 1, sys, subjects.EventTaskAccepted, 2000, false, ""),
		ev("T5", 1, sys, subjects.EventTaskCancelled, 4000, false, ""),
		ev("T2", 0, subjects.ActorHuman, subjects.EventTaskRedriven, 30000, false, "redriven"),
		ev("T4", 0, subjects.ActorHuman, subjects.EventTaskRedriven, 9500, false, "redriven"),
		ev("T6", 0, subjects.ActorHuman, subjects.EventTaskRedriven, 100, false, "redriven"),
	}
}

func TestSummarize(t *testing.T) {
	evs := rdSumEvents()
	rand.New(rand.NewPCG(1, 2)).Shuffle(len(evs), func(i, j int) { evs[i], evs[j] = evs[j], evs[i] })
	s := audit.Summarize(evs)

	type row struct {
		task     string
		outcome  audit.Outcome
		reason   string
		attempts int
		duration time.Duration
		cache    audit.RoleCache
	}
	var got []row
	for _, ts := range s.Tasks {
		require.Equal(t, "w", ts.Workflow)
		got = append(got, row{ts.Task, ts.Outcome, ts.Reason, ts.Attempts, ts.Duration, ts.Cache})
	}
	require.Equal(t, []row{
		{"T1", audit.OutcomeCompleted, "", 2, 6 * time.Second, audit.RoleCache{Planner: audit.CacheHit, Implementer: audit.CacheRun, Judge: audit.CachePartial}},
		{"T3", audit.OutcomeRejected, "invalid_value", 0, 0, audit.RoleCache{}},
		{"T2", audit.OutcomeFailed, "max_deliveries", 1, 10 * time.Second, audit.RoleCache{Planner: audit.CacheRun}},
		{"T5", audit.OutcomeCancelled, "", 1, 2 * time.Second, audit.RoleCache{}},
		{"T4", audit.OutcomeRunning, "", 1, 1500 * time.Millisecond, audit.RoleCache{Planner: audit.CacheHit}},
	}, got)
	require.Equal(t, 11*time.Second, s.WallClock, "first task event to the last terminal one")
	require.Equal(t, 18*time.Second, s.TaskTime, "finished tasks only")
	require.InDelta(t, 18.0/11.0, s.Speedup, 1e-9)

	var buf bytes.Buffer
	require.NoError(t, s.WriteTable(&buf))
	out := buf.String()
	require.Contains(t, out, "5 tasks, 1 completed, 1 failed, 1 cancelled, 1 rejected, 1 running\n")
	require.Contains(t, out, "wall-clock 11.0s  sum of task time 18.0s  speedup 1.64x\n")
	lines := strings.Split(out, "\n")
	col := strings.Index(lines[0], "OUTCOME")
	require.Positive(t, col)
	for i, want := range []string{"completed", "rejected (invalid_value)", "failed (max_deliveries)", "cancelled", "running"} {
		require.Equal(t, col, strings.Index(lines[i+1], want), "aligned: %q", lines[i+1])
	}

	empty := audit.Summarize(nil)
	require.Zero(t, empty.Speedup)
	buf.Reset()
	require.NoError(t, empty.WriteTable(&buf))
	require.Contains(t, buf.String(), "wall-clock 0.0s  sum of task time 0.0s  speedup 0.00x")
}

func TestWriteJSONLine(t *testing.T) {
	body := "{\n  \"event_id\": \"w/T1/1/system/task_accepted\",\n  \"future_field\": [1, 2]\n}"
	var buf bytes.Buffer
	require.NoError(t, audit.WriteJSONLine(&buf, audit.Record{Data: []byte(body)}))
	require.Equal(t, `{"event_id":"w/T1/1/system/task_accepted","future_field":[1,2]}`+"\n", buf.String())

	buf.Reset()
	ev := rdSumEvents()[1]
	require.NoError(t, audit.WriteJSONLine(&buf, audit.Record{Event: ev}))
	var back subjects.AuditEvent
	require.NoError(t, json.Unmarshal(buf.Bytes(), &back))
	require.Equal(t, ev.EventID, back.EventID)
	require.Equal(t, 1, strings.Count(buf.String(), "\n"))

	require.Error(t, audit.WriteJSONLine(&buf, audit.Record{Data: []byte("{not json")}))
}
