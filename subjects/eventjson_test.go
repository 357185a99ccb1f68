package subjects

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// rawSeeds are raw fields json.Marshal keeps, changes or refuses.
var rawSeeds = []string{
	`{}`, `[]`, `{"a":1}`, `{"plan":"fix the parser","steps":["a","b"],"n":-1.5e+10,"ok":true,"x":null}`,
	`{"deep":[[[[{"a":[0,-0,0.5,1E9,2e-3]}]]]]}`, `"text"`, `12`, `true`, `null`,
	`{"a": 1}`, ` {}`, "{}\n", `{"html":"<b>&</b>"}`, "{\"ls\":\"\u2028\u2029\"}", `{"esc":"\" \\ \/ \b \f \n \r \t \u00e9 \uD83D"}`,
	"{\"ctl\":\"\x01\"}", "{\"bad\":\"\xff\xfe\"}", `{"dash":"a—b ’ “”"}`, `{`, `{"a":}`, `[1,]`, `01`, `1.`, `-`, `1e`, `tru`, `nul`,
	`{"a":1}{}`, `{"a" 1}`, `"\x"`, `"\u12"`, `"unterminated`, ``, strings.Repeat("[", 70) + strings.Repeat("]", 70),
}

func TestMarshalEventIsJSONMarshal(t *testing.T) {
	base := AuditEvent{
		EventID: "wf/t1/1/planner/planner_decision", EventType: EventPlannerDecision, WorkflowID: "wf", TaskID: "t1",
		Actor: ActorOf(RolePlanner), Attempt: 1, Timestamp: time.Date(2026, 12, 1, 20, 0, 0, 123456789, time.UTC),
		Action: "plan", Reasoning: "because <it> & \"that\"\n\ttab\u2028 \xff é", Status: StatusSuccess,
		DurationMS: 1234, Worker: "w-1", Cached: true,
	}
	for _, raw := range rawSeeds {
		t.Run(raw, func(t *testing.T) {
			ev := base
			ev.Input, ev.Output, ev.Metadata = json.RawMessage(raw), json.RawMessage(`{"ok":true}`), json.RawMessage(raw)
			requireSameAsMarshal(t, &ev, MarshalEvent)
		})
	}
	for name, ev := range map[string]AuditEvent{
		"zero":          {},
		"nil raw":       {EventID: "x"},
		"local time":    {Timestamp: time.Date(2026, 1, 2, 3, 4, 5, 0, time.FixedZone("x", -7*3600))},
		"year 10000":    {Timestamp: time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
		"negative year": {Timestamp: time.Date(-1, 1, 1, 0, 0, 0, 0, time.UTC)},
		"controls":      {Error: "\x00\x1f\x7f\b\f", Action: strings.Repeat("a", 300)},
	} {
		t.Run(name, func(t *testing.T) { requireSameAsMarshal(t, &ev, MarshalEvent) })
	}
}

func TestCanonicalJSON(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		want bool
	}{
		{`{}`, true},
		{`{"a":[1,-0.5e+3,"x",true,false,null,{}]}`, true},
		{`{"dash":"a—b"}`, true},
		{`"\u2028"`, true}, // escaped already
		{`{"a": 1}`, false},
		{"{}\n", false},
		{`"<"`, false},
		{"\"\u2028\"", false},
		{"\"\x01\"", false},
		{`{"a":1,}`, false},
		{`01`, false},
		{``, false},
		{strings.Repeat("[", canonicalMaxDepth) + strings.Repeat("]", canonicalMaxDepth), true},
		{strings.Repeat("[", canonicalMaxDepth+1) + strings.Repeat("]", canonicalMaxDepth+1), false},
	} {
		t.Run(tc.raw, func(t *testing.T) {
			require.Equal(t, tc.want, canonicalJSON([]byte(tc.raw)))
			if tc.want {
				requireKeptByMarshal(t, []byte(tc.raw))
			}
		})
	}
}

func FuzzMarshalEvent(f *testing.F) {
	for _, raw := range rawSeeds {
		f.Add("wf/t1/1/judge/judge_verdict", "approve", "looks <good> & \xff\u2028", raw, `{"ok":true}`, 2, int64(1764619200123456789), true)
	}
	f.Fuzz(func(t *testing.T, id, action, reasoning, input, output string, attempt int, nanos int64, cached bool) {
		ev := AuditEvent{
			EventID: id, EventType: EventJudgeVerdict, WorkflowID: action, TaskID: reasoning, Actor: Actor(id),
			Attempt: attempt, Timestamp: time.Unix(0, nanos).UTC(), Action: action, Reasoning: reasoning,
			Input: json.RawMessage(input), Output: json.RawMessage(output), Status: reasoning, Error: input,
			Cached: cached, DurationMS: nanos, Worker: output, Metadata: json.RawMessage(output),
		}
		requireSameAsMarshal(t, &ev, MarshalEvent)
	})
}

func FuzzCanonicalJSON(f *testing.F) {
	for _, raw := range rawSeeds {
		f.Add([]byte(raw))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		if canonicalJSON(raw) {
			requireKeptByMarshal(t, raw)
		}
	})
}

// requireSameAsMarshal checks that enc writes what json.Marshal writes,
// or fails where it fails.
func requireSameAsMarshal[T any](t *testing.T, v *T, enc func(*T) ([]byte, error)) {
	t.Helper()
	want, wantErr := json.Marshal(v)
	got, err := enc(v)
	if wantErr != nil {
		require.EqualError(t, err, wantErr.Error())
		return
	}
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

// requireKeptByMarshal checks that json.Marshal writes raw unchanged.
func requireKeptByMarshal(t *testing.T, raw []byte) {
	t.Helper()
	out, err := json.Marshal(json.RawMessage(raw))
	require.NoError(t, err)
	require.Equal(t, string(raw), string(out))
}

// benchEvent is a judge verdict the size of a bench task's.
func benchEvent() *AuditEvent {
	return &AuditEvent{
		EventID: "bench-wf/t1234/1/judge/judge_verdict", EventType: EventJudgeVerdict, WorkflowID: "bench-wf", TaskID: "t1234",
		Actor: ActorOf(RoleJudge), Attempt: 1, Timestamp: time.Date(2026, 12, 1, 20, 0, 0, 123456789, time.UTC),
		Action: VerdictApprove, Reasoning: "the change does what the plan says, and the verification passes",
		Input:  json.RawMessage(`{"task":{"id":"t1234","workflow":"bench-wf","scope":"bench bench-wf task 1234","verification":"the sim approves"},"plan":{"steps":["read the scope","make the change","run the verification"]},"change":{"summary":"made the change the plan asked for","files":["a.go","b.go"]},"attempt":1}`),
		Output: json.RawMessage(`{"verdict":"approve","feedback":"","checks":[{"name":"verification","ok":true}]}`),
		Status: StatusSuccess, DurationMS: 3, Worker: "drover-bench-1",
		Metadata: json.RawMessage(`{"runner":"sim","model":"sim","cache_key":"judge.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef","hash":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}`),
	}
}

func BenchmarkMarshalEvent(b *testing.B) {
	benchmarkAgainstMarshal(b, benchEvent(), "MarshalEvent", MarshalEvent)
}

// benchmarkAgainstMarshal times enc and json.Marshal on v.
func benchmarkAgainstMarshal[T any](b *testing.B, v *T, name string, enc func(*T) ([]byte, error)) {
	for _, bc := range []struct {
		name string
		enc  func(*T) ([]byte, error)
	}{
		{name, enc},
		{"json.Marshal", func(v *T) ([]byte, error) { return json.Marshal(v) }},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.enc(v); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
