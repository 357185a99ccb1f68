package tune_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/tune"
	"github.com/droverhq/drover/subjects"
)

var names = subjects.MustNames(subjects.DefaultPrefix)

// history publishes synthetic audit events the way workers write them.
type history struct {
	t  *testing.T
	js jetstream.JetStream
	at time.Time
}

func setup(t *testing.T) *history {
	t.Helper()
	_, _, js, _ := natstest.Provisioned(t, natstest.Sync(time.Minute))
	return &history{t: t, js: js, at: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
}

// event publishes one event; edit adjusts it first.
func (h *history) event(wf, task string, actor subjects.Actor, et subjects.EventType, attempt int, edit func(*subjects.AuditEvent)) *jetstream.PubAck {
	h.t.Helper()
	h.at = h.at.Add(time.Millisecond)
	ev := subjects.AuditEvent{EventID: subjects.EventID(wf, task, attempt, actor, et, 0), EventType: et, WorkflowID: wf,
		TaskID: task, Actor: actor, Attempt: attempt, Timestamp: h.at, Status: subjects.StatusSuccess, Worker: "test"}
	if edit != nil {
		edit(&ev)
	}
	ev.Normalize()
	body, err := json.Marshal(ev)
	require.NoError(h.t, err)
	ack, err := h.js.Publish(context.Background(), names.AuditSubject(wf, task, actor, et), body, jetstream.WithMsgID(ev.EventID))
	require.NoError(h.t, err)
	return ack
}

// accepted publishes a task_accepted event whose request has type ty ("":
// no type field).
func (h *history) accepted(wf, task, ty string) *jetstream.PubAck {
	req := map[string]any{"id": task, "workflow": wf, "scope": "do " + task}
	if ty != "" {
		req["type"] = ty
	}
	return h.event(wf, task, subjects.ActorSystem, subjects.EventTaskAccepted, 1, func(e *subjects.AuditEvent) {
		e.Input, _ = json.Marshal(req)
	})
}

// role publishes a role's success event that took d.
func (h *history) role(wf, task string, role subjects.Role, attempt int, d time.Duration, edit func(*subjects.AuditEvent)) {
	h.event(wf, task, subjects.ActorOf(role), subjects.RoleEvent(role), attempt, func(e *subjects.AuditEvent) {
		e.DurationMS = d.Milliseconds()
		if edit != nil {
			edit(e)
		}
	})
}

// run publishes a task after its task_accepted event: the planner took
// planner, each of its rounds an implementer of 60s and a judge of 5s
// rejecting all rounds but the last, then its completion.
func (h *history) run(wf, task string, planner time.Duration, rounds int) {
	h.role(wf, task, subjects.RolePlanner, 1, planner, nil)
	for r := 1; r <= rounds; r++ {
		h.role(wf, task, subjects.RoleImplementer, r, time.Minute, nil)
		h.role(wf, task, subjects.RoleJudge, r, 5*time.Second, func(e *subjects.AuditEvent) {
			e.Action = subjects.VerdictApprove
			if r < rounds {
				e.Action = subjects.VerdictReject
			}
		})
	}
	h.event(wf, task, subjects.ActorSystem, subjects.EventTaskCompleted, rounds, nil)
}

// generate publishes the fixture history and returns the stream time
// between the docs task D4's acceptance and the rest of it.
func generate(h *history) time.Time {
	// feature: planners of 1..100s; 60 tasks approved in round 1, 35 in
	// round 2, 5 in round 3 (95% within 2 rounds).
	for i := range 100 {
		task := fmt.Sprintf("F%03d", i)
		h.accepted("hist", task, "feature")
		rounds := 1
		if i >= 95 {
			rounds = 3
		} else if i >= 60 {
			rounds = 2
		}
		h.run("hist", task, time.Duration(i+1)*time.Second, rounds)
	}
	// A cache hit says nothing about the runner: an hour that must not count.
	h.role("hist", "F000", subjects.RoleImplementer, 9, time.Hour, func(e *subjects.AuditEvent) { e.Cached = true })
	h.event("hist", "F099", "implementer", subjects.EventTaskRetried, 2, func(e *subjects.AuditEvent) {
		e.Status, e.Error, e.DurationMS = subjects.StatusFailure, "implementer: role timed out after 30m0s", 1800000
	})
	h.event("hist", "F098", "planner", subjects.EventTaskRetried, 1, func(e *subjects.AuditEvent) {
		e.Status, e.Error = subjects.StatusFailure, "planner: connection refused"
	})
	// flaky: every round rejected, the task failed.
	h.accepted("hist", "X1", "flaky")
	h.role("hist", "X1", subjects.RolePlanner, 1, time.Second, nil)
	for r := 1; r <= 3; r++ {
		h.role("hist", "X1", subjects.RoleJudge, r, 5*time.Second, func(e *subjects.AuditEvent) { e.Action = subjects.VerdictReject })
	}
	h.event("hist", "X1", subjects.ActorSystem, subjects.EventTaskFailed, 3, func(e *subjects.AuditEvent) { e.Action = "max_attempts" })
	// The default type, and docs, of another workflow.
	for i := range 3 {
		h.accepted("other", fmt.Sprintf("T%d", i), "")
		h.run("other", fmt.Sprintf("T%d", i), time.Second, 1)
	}
	for i := range 4 {
		h.accepted("other", fmt.Sprintf("D%d", i), "docs")
		h.run("other", fmt.Sprintf("D%d", i), time.Second, 1)
	}
	ack := h.accepted("other", "D4", "docs")
	st, err := h.js.Stream(context.Background(), names.AuditStream())
	require.NoError(h.t, err)
	m, err := st.GetMsg(context.Background(), ack.Sequence)
	require.NoError(h.t, err)
	h.run("other", "D4", time.Second, 1)
	return m.Time.Add(time.Nanosecond)
}

func TestAnalyzeRecommends(t *testing.T) {
	t.Parallel()
	h := setup(t)
	cut := generate(h)
	ctx := context.Background()

	rep, err := tune.Analyze(ctx, h.js, names, tune.Options{})
	require.NoError(t, err)
	require.Equal(t, 109, rep.Tasks)
	require.Equal(t, []tune.Timeout{
		// 109 planner runs: ten of 1s, then 2s..100s; the 99th percentile is 99s, × 1.5 = 2m28.5s.
		{Role: "planner", Runs: 109, PercentileMS: 99000, Timeout: "3m", TimeoutMS: 180000},
		// 153 rounds of 60s (the cached hour is not counted): 90s, rounded up.
		{Role: "implementer", Runs: 153, PercentileMS: 60000, Timeout: "2m", TimeoutMS: 120000},
		{Role: "judge", Runs: 156, PercentileMS: 5000, Timeout: "30s", TimeoutMS: 30000},
	}, rep.Timeouts)

	types := map[string]tune.TypeStats{}
	for _, ts := range rep.Types {
		types[ts.Type] = ts
	}
	require.Equal(t, []string{"docs", "feature", "flaky", "task"}, []string{rep.Types[0].Type, rep.Types[1].Type, rep.Types[2].Type, rep.Types[3].Type})
	require.Equal(t, tune.TypeStats{Type: "feature", Completed: 100, Rounds: []int{60, 35, 5}, Verdicts: []int{100, 40, 5},
		Rejections: []int{40, 5, 0}, RoundsNeeded: 2, MaxAttempts: 3}, types["feature"])
	require.Equal(t, tune.TypeStats{Type: "docs", Completed: 5, Rounds: []int{5}, Verdicts: []int{5}, Rejections: []int{0},
		RoundsNeeded: 1, MaxAttempts: 2, LowConfidence: true}, types["docs"])
	require.Equal(t, 3, types["task"].Completed)
	require.Equal(t, 2, types["task"].MaxAttempts)
	require.Equal(t, tune.TypeStats{Type: "flaky", Failed: 1, Rounds: []int{}, Verdicts: []int{1, 1, 1}, Rejections: []int{1, 1, 1},
		LowConfidence: true}, types["flaky"])

	require.Contains(t, rep.Roles, tune.RoleStats{Role: "planner", Type: "feature", Runs: 100, P50MS: 50000, P95MS: 95000, P99MS: 99000, Failures: 1})
	require.Contains(t, rep.Roles, tune.RoleStats{Role: "implementer", Runs: 153, P50MS: 60000, P95MS: 60000, P99MS: 60000, Timeouts: 1})

	var out bytes.Buffer
	require.NoError(t, tune.WriteSnippet(&out, rep))
	require.Contains(t, out.String(), "roles:\n  planner:\n    timeout: 3m ")
	require.Contains(t, out.String(), "  implementer:\n    timeout: 2m ")
	require.Contains(t, out.String(), "  judge:\n    timeout: 30s ")
	require.Contains(t, out.String(), "#   feature: 3   # 100 completed tasks, 95% within 2 rounds\n")
	require.Contains(t, out.String(), "#   docs: 2   # 5 completed tasks, 95% within 1 round; low confidence (fewer than 20)\n")
	require.Contains(t, out.String(), "#   flaky: no completed task (1 failed)")
	out.Reset()
	require.NoError(t, tune.WriteTable(&out, rep))
	require.Regexp(t, `feature\s+100\s+0\s+60,35,5\s+40/100,5/40,0/5\s+3\n`, out.String())

	// --workflow reads one workflow; --since starts inside D4, whose type
	// comes from its task_accepted event before the cut.
	rep, err = tune.Analyze(ctx, h.js, names, tune.Options{Workflow: "other", Percentile: 50, Headroom: 2})
	require.NoError(t, err)
	require.Equal(t, 8, rep.Tasks)
	require.Equal(t, "30s", rep.Timeouts[0].Timeout)
	require.Equal(t, "2m", rep.Timeouts[1].Timeout)
	rep, err = tune.Analyze(ctx, h.js, names, tune.Options{Since: cut})
	require.NoError(t, err)
	require.Equal(t, 4, rep.Events)
	require.Len(t, rep.Types, 1)
	require.Equal(t, "docs", rep.Types[0].Type)
	require.Equal(t, 1, rep.Types[0].Completed)
}

func TestOptionsAreChecked(t *testing.T) {
	t.Parallel()
	_, err := tune.Analyze(context.Background(), nil, names, tune.Options{Percentile: 101})
	require.ErrorContains(t, err, "percentile 101")
	_, err = tune.Analyze(context.Background(), nil, names, tune.Options{Headroom: 0.5})
	require.ErrorContains(t, err, "headroom 0.5")
}

func TestReadable(t *testing.T) {
	t.Parallel()
	for in, want := range map[time.Duration]string{
		0: "30s", 10 * time.Second: "30s", 31 * time.Second: "1m", 90 * time.Second: "2m",
		148500 * time.Millisecond: "3m", 10*time.Minute + time.Second: "15m", 61 * time.Minute: "1h30m",
		7 * time.Hour: "7h", 70 * time.Second: "2m",
	} {
		require.Equal(t, want, tune.FormatDuration(tune.Readable(in)), in.String())
	}
	require.Equal(t, "1m10s", tune.FormatDuration(70*time.Second))
	require.Equal(t, "1h10m", tune.FormatDuration(70*time.Minute))
}
