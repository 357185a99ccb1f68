package benchlab

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// The minimal worker's data is a task's real record: five events in the
// contract's order, each with its headers and linked to the one before,
// cache entries that decode to the sim's results under their keys, and two
// states whose outboxes hold the events of each commit.
func TestTaskDataIsATasksRecord(t *testing.T) {
	cfg := withDefaults(Config{Tasks: 3})
	m := newDataMaker(cfg)
	msg, err := m.request(2)
	require.NoError(t, err)
	d, err := m.make(context.Background(), 2, msg.Data, "p.audit.", "bench.t2")
	require.NoError(t, err)

	req, rej := subjects.DecodeTask(msg.Data, m.limits)
	require.Nil(t, rej)
	require.Equal(t, "t2", req.ID)
	prev := ""
	for k, msg := range d.events {
		var ev subjects.AuditEvent
		require.NoError(t, json.Unmarshal(msg.Data, &ev), "event %d", k)
		require.Equal(t, taskEvents[k].eventType, string(ev.EventType))
		require.Equal(t, taskEvents[k].actor, string(ev.Actor))
		require.Equal(t, req.ID, ev.TaskID)
		require.Equal(t, "p.audit.bench.t2."+taskEvents[k].actor+"."+taskEvents[k].eventType, msg.Subject)
		require.Equal(t, ev.EventID, msg.Header.Get(subjects.HeaderMsgID))
		require.Equal(t, subjects.ContractVersion, msg.Header.Get(subjects.HeaderContract))
		require.Equal(t, prev, msg.Header.Get(subjects.HeaderPrev), "event %d links to the one before", k)
		prev = audit.LinkHex(msg.Subject, prev, msg.Data)
	}
	sim := runner.NewSim(runner.SimOptions{})
	var plan, change, verdict json.RawMessage
	for r, role := range taskRoles {
		rq := runner.Request{Role: role, Task: req.WithDefaults(), Attempt: 1, Plan: plan, Change: change}
		require.Equal(t, cache.Key(sim.Identity(), rq), d.keys[r])
		var res runner.Result
		require.NoError(t, json.Unmarshal(d.entries[r], &res))
		want, err := sim.Run(context.Background(), rq)
		require.NoError(t, err)
		require.JSONEq(t, string(want.Output), string(res.Output))
		switch role {
		case subjects.RolePlanner:
			plan = res.Output
		case subjects.RoleImplementer:
			change = res.Output
		case subjects.RoleJudge:
			verdict = res.Output
		}
	}
	// The final result is the contract's: the change, the verdict and the
	// rounds, in task_completed's output and in the last state.
	var done subjects.AuditEvent
	require.NoError(t, json.Unmarshal(d.events[4].Data, &done))
	want := `{"attempts":1,"change":` + string(change) + `,"verdict":` + string(verdict) + `}`
	require.JSONEq(t, want, string(done.Output))
	var final subjects.TaskState
	require.NoError(t, json.Unmarshal(d.final, &final))
	require.JSONEq(t, want, string(final.Result))
	require.False(t, final.StartedAt.IsZero(), "the state says when the task was picked up")
	for _, tc := range []struct {
		value  []byte
		state  string
		events []int
	}{{d.first, subjects.StateRunning, []int{0, 1}}, {d.mid, subjects.StateRunning, []int{2}}, {d.final, subjects.StateCompleted, []int{3, 4}}} {
		var st subjects.TaskState
		require.NoError(t, json.Unmarshal(tc.value, &st))
		require.Equal(t, tc.state, st.State)
		require.Len(t, st.Outbox, len(tc.events))
		for j, k := range tc.events {
			require.Equal(t, d.events[k].Data, st.Outbox[j].Event.Body, "the outbox holds event %d as published", k)
		}
	}
}

// BenchmarkTaskData is what making one task's data costs on its own: the
// minimal worker's work per task beyond contract-ops' operations.
func BenchmarkTaskData(b *testing.B) {
	m := newDataMaker(Config{Tasks: 1})
	msg, err := m.request(7)
	require.NoError(b, err)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := m.make(context.Background(), 7, msg.Data, "p.audit.", "bench.t7"); err != nil {
			b.Fatal(err)
		}
	}
}
