package subjects

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// benchState is a bench task's last state: three roles done, the last
// commit's three events in its outbox.
func benchState() *TaskState {
	at := time.Date(2026, 12, 1, 20, 0, 0, 123456789, time.UTC)
	st := &TaskState{
		Workflow: "bench-wf", Task: "t1234", State: StateCompleted, Stage: StageDone, Attempt: 1,
		Outputs:   map[Role]string{RolePlanner: "planner.0123", RoleImplementer: "implementer.4567", RoleJudge: "judge.89ab"},
		UpdatedAt: at, Worker: "drover-bench-1", Queue: "bench", StreamSeq: 1234, Delivery: 1, StartedAt: at.Add(-time.Second),
		Result: json.RawMessage(`{"verdict":"approve"}`),
	}
	body, err := MarshalEvent(benchEvent())
	if err != nil {
		panic(err)
	}
	for _, typ := range []EventType{EventImplementerChange, EventJudgeVerdict, EventTaskCompleted} {
		st.Outbox = append(st.Outbox, OutboxItem{Event: &OutboxEvent{ID: "bench-wf/t1234/1/x/" + string(typ), Workflow: "bench-wf", Task: "t1234", Actor: ActorSystem, Type: typ, Time: at, Body: body}})
	}
	return st
}

func TestMarshalTaskStateIsJSONMarshal(t *testing.T) {
	at := time.Date(2026, 12, 1, 20, 0, 0, 5, time.FixedZone("x", 3600))
	for name, st := range map[string]*TaskState{
		"zero":  {},
		"bench": benchState(),
		"every field": {
			Workflow: "w<", Task: "t&", State: StateFailed, Stage: "judge", Attempt: 3,
			Outputs: map[Role]string{"zz": "b\u2028", "a": "\xff"}, Request: json.RawMessage(`{"id":"t","scope":"x y"}`),
			UpdatedAt: at, Worker: "w\n", Queue: "q", StreamSeq: 1, Delivery: 2, Type: "bug", Tries: map[Role]int{RoleJudge: 2, RolePlanner: -1},
			TryBase: 3, RetryFrom: 4, Feedback: "fix \"it\"", Reason: "max_attempts", Result: json.RawMessage(`[1,2]`), StartedAt: at,
			Outbox: []OutboxItem{{}, {DLQ: &DLQIntent{Reason: "r", Error: "e<>"}}, {Event: &OutboxEvent{Body: []byte{}}, DLQ: &DLQIntent{}}, {Event: &OutboxEvent{}}},
		},
		"empty maps":       {Outputs: map[Role]string{}, Tries: map[Role]int{}, Request: json.RawMessage{}, Outbox: []OutboxItem{}},
		"spaced request":   {Request: json.RawMessage(`{"id": "t"}`)},
		"invalid result":   {Result: json.RawMessage(`{`)},
		"workspace":        {Workspace: &TaskWorkspace{}},
		"review":           {Review: &TaskReview{}},
		"year 10000":       {UpdatedAt: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"started year -1":  {StartedAt: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		"event year 10000": {Outbox: []OutboxItem{{Event: &OutboxEvent{Time: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)}}}},
	} {
		t.Run(name, func(t *testing.T) { requireSameAsMarshal(t, st, MarshalTaskState) })
	}
}

func FuzzMarshalTaskState(f *testing.F) {
	f.Add("bench-wf", "t1", "planner", "cache.key", `{"id":"t1"}`, `{"ok":true}`, []byte(`{"event_id":"x"}`), uint64(7), int64(1764619200123456789), 3)
	f.Add("<&>", "\xff\u2028", "", "", `{"a": 1}`, ``, []byte(nil), uint64(0), int64(-1), 0)
	f.Fuzz(func(t *testing.T, wf, task, role, out, request, result string, body []byte, seq uint64, nanos int64, items int) {
		at := time.Unix(0, nanos).UTC()
		st := &TaskState{
			Workflow: wf, Task: task, State: role, Stage: out, Attempt: items, Request: json.RawMessage(request), UpdatedAt: at,
			Worker: wf, Queue: task, StreamSeq: seq, Delivery: seq / 2, Type: role, TryBase: seq % 3, RetryFrom: seq % 5,
			Feedback: request, Reason: Reason(result), Result: json.RawMessage(result), StartedAt: at,
		}
		if role != "" {
			st.Outputs = map[Role]string{Role(role): out, Role(out): role}
			st.Tries = map[Role]int{Role(role): items}
		}
		for i := range min(max(items, 0), 4) {
			it := OutboxItem{Event: &OutboxEvent{ID: wf, Workflow: task, Task: role, Actor: Actor(out), Type: EventType(role), Time: at, Body: body}}
			if i%2 == 1 {
				it.DLQ = &DLQIntent{Reason: Reason(out), Error: strings.Repeat(task, i)}
			}
			st.Outbox = append(st.Outbox, it)
		}
		requireSameAsMarshal(t, st, MarshalTaskState)
	})
}

func BenchmarkMarshalTaskState(b *testing.B) {
	benchmarkAgainstMarshal(b, benchState(), "MarshalTaskState", MarshalTaskState)
}
