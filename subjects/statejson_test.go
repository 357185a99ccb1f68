package subjects

import (
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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

// TestEncodersCoverEveryField fills every exported field of an event and
// of a state (its outbox items, events and DLQ entries too) with a value
// json.Marshal writes, each field a value of its own, and requires the
// hand-written encoders to take them without falling back and write the
// same bytes: a field added to any of these types and not to its
// encoder, or two fields written in each other's place, fails here.
func TestEncodersCoverEveryField(t *testing.T) {
	var (
		f  filler
		ev AuditEvent
	)
	f.fill(reflect.ValueOf(&ev).Elem())
	got, ok := appendEvent(&ev)
	require.True(t, ok, "an event of canonical fields is encoded by hand")
	want, err := json.Marshal(&ev)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))

	// Two outbox items, each filled.
	st := TaskState{Outbox: make([]OutboxItem, 2)}
	f.skip = map[string]bool{"Workspace": true, "Review": true} // they go to json.Marshal
	f.fill(reflect.ValueOf(&st).Elem())
	got, ok = appendTaskState(nil, &st)
	require.True(t, ok, "a state of canonical fields is encoded by hand")
	want, err = json.Marshal(&st)
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))

	_, ok = appendTaskState(nil, nil)
	require.False(t, ok, "a nil state goes to json.Marshal, which writes null")
	b, err := MarshalEvent(nil)
	require.NoError(t, err)
	require.Equal(t, "null", string(b))
}

// filler sets fields to values that are not their zero values and differ
// from each other.
type filler struct {
	n    int
	skip map[string]bool // field names left as they are
}

func (f *filler) next() int { f.n++; return f.n }

// fill fills every exported field of v but those in f.skip, recursively,
// nil pointers included. A slice that has items has each filled, an empty
// one gets one; a map gets two entries, so that their order is checked
// too. (TestMarshalTaskStateIsJSONMarshal has outbox items of every
// shape.)
func (f *filler) fill(v reflect.Value) {
	switch v.Kind() {
	case reflect.Struct:
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Date(2026, 12, 1, 20, 0, 0, f.next(), time.UTC)))
			return
		}
		for i := range v.NumField() {
			if fd := v.Type().Field(i); fd.IsExported() && !f.skip[fd.Name] {
				f.fill(v.Field(i))
			}
		}
	case reflect.String:
		v.SetString(fmt.Sprintf("x<&\u2028%d", f.next()))
	case reflect.Int, reflect.Int64:
		v.SetInt(int64(f.next()))
	case reflect.Uint64:
		v.SetUint(uint64(f.next()))
	case reflect.Bool:
		v.SetBool(true)
	case reflect.Slice:
		switch {
		case v.Type() == reflect.TypeFor[json.RawMessage]():
			v.SetBytes(fmt.Appendf(nil, `{"k":[%d,"v"]}`, f.next()))
		case v.Type().Elem().Kind() == reflect.Uint8:
			v.SetBytes(fmt.Appendf(nil, "body %d", f.next()))
		case v.Len() > 0:
			for i := range v.Len() {
				f.fill(v.Index(i))
			}
		default:
			s := reflect.MakeSlice(v.Type(), 1, 1)
			f.fill(s.Index(0))
			v.Set(s)
		}
	case reflect.Map:
		m := reflect.MakeMap(v.Type())
		for range 2 {
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			f.fill(k)
			f.fill(e)
			m.SetMapIndex(k, e)
		}
		v.Set(m)
	case reflect.Pointer:
		if v.IsNil() {
			v.Set(reflect.New(v.Type().Elem()))
		}
		f.fill(v.Elem())
	default:
		panic("filler: no value for a field of kind " + v.Kind().String() + ": teach it one")
	}
}

// AppendTaskState appends after what dst holds, by hand or by the
// fallback, and a buffer used again for another state holds nothing of the
// state before.
func TestAppendTaskState(t *testing.T) {
	long := benchState()
	short := &TaskState{Workflow: "wf", Task: "t1", State: StateRunning, UpdatedAt: time.Unix(0, 0).UTC()}
	inWorkspace := &TaskState{Workflow: "wf", Task: "t2", Workspace: &TaskWorkspace{Branch: "drover/t2"}} // json.Marshal writes it
	for _, st := range []*TaskState{long, short, inWorkspace} {
		want, err := json.Marshal(st)
		require.NoError(t, err)
		got, err := AppendTaskState([]byte("prefix:"), st)
		require.NoError(t, err)
		require.Equal(t, "prefix:"+string(want), string(got))
	}
	buf, err := AppendTaskState(nil, long)
	require.NoError(t, err)
	buf, err = AppendTaskState(buf[:0], short)
	require.NoError(t, err)
	want, err := json.Marshal(short)
	require.NoError(t, err)
	require.Equal(t, string(want), string(buf))
}
