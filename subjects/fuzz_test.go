package subjects_test

import (
	"bytes"
	"encoding/json"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/droverhq/drover/subjects"
)

// decodeReasons are the reasons DecodeTask can give; the others need a
// worker's knowledge (state, deliveries, runners).
var decodeReasons = []subjects.Reason{
	subjects.ReasonInvalidJSON, subjects.ReasonMissingField,
	subjects.ReasonInvalidValue, subjects.ReasonTooLarge,
}

func FuzzDecodeTask(f *testing.F) {
	for _, seed := range []string{
		contractExample,
		minimal,
		withField("metadata", `{"sim":{"latency_ms":{"planner":1},"judge_rejects":1,"fail":{"role":"implementer","times":2},"panic":"judge","hang":"implementer"}}`),
		withField("metadata", `{"unknown_fields":{"x":1},"a":[1,2.5,-3e2,"<&>",null,true]}`),
		`{"id":"T1.1","workflow":"a/b*c>d","scope":"s","x":{"y":[{}]},"ID":"T2"}`,
		`{"id":"T1\u002e1","workflow":"w\ud800","scope":"\u00e9\n","verification":"","type":""}`,
		// Hostile.
		``,
		`null`,
		`[]`,
		`{"id":"T1","id":"T1","workflow":"wf","scope":"s"}`,
		withField("metadata", `{"a":1,"a":2}`),
		withField("max_attempts", `1e400`),
		withField("max_attempts", `123456789012345678901234567890`),
		withField("max_attempts", `"3"`),
		minimal + `{}`,
		"{\"id\":\"T\xff\",\"workflow\":\"wf\",\"scope\":\"s\"}",
		`{"id":"_","workflow":" ","scope":"  "}`,
		withField("metadata", `{"a":`+nested(40)+`}`),
		withField("x", nested(31)),
		withField("metadata", `{"sim":{"Panic":"jduge"}}`),
	} {
		f.Add([]byte(seed))
	}

	f.Fuzz(func(t *testing.T, body []byte) {
		orig := bytes.Clone(body)
		req, rej := subjects.DecodeTask(body, subjects.Limits{})
		if !bytes.Equal(orig, body) {
			t.Fatalf("DecodeTask modified its input")
		}
		if rej != nil {
			checkRejection(t, req, rej)
			return
		}
		checkAccepted(t, req)

		// A decoded request, re-encoded, decodes to the same request.
		// Unknown fields move two levels down, into metadata.unknown_fields,
		// and encoding/json escapes <, > and &, so the limits are wider.
		again, err := json.Marshal(req)
		if err != nil {
			t.Fatalf("json.Marshal(%+v): %v", req, err)
		}
		req2, rej2 := subjects.DecodeTask(again, subjects.Limits{MaxBytes: 8 * len(body), MaxDepth: subjects.DefaultMaxDepth + 2})
		if rej2 != nil {
			t.Fatalf("re-encoded request rejected: %v\nbody:    %q\nencoded: %q", rej2, body, again)
		}
		if !sameRequest(t, req, req2) {
			t.Fatalf("round trip changed the request\nbefore: %+v\nafter:  %+v\nencoded: %q", req, req2, again)
		}
	})
}

func checkRejection(t *testing.T, req subjects.TaskRequest, rej *subjects.RejectError) {
	t.Helper()
	if !slices.Contains(subjects.Reasons, rej.Reason) || !slices.Contains(decodeReasons, rej.Reason) {
		t.Fatalf("reason %q is not a decoding reason", rej.Reason)
	}
	if !reflect.DeepEqual(req, subjects.TaskRequest{}) {
		t.Fatalf("rejected, yet returned %+v", req)
	}
	for _, id := range []string{rej.Workflow, rej.Task} {
		if id != "" && subjects.ValidateID(id) != nil {
			t.Fatalf("rejection names invalid ID %q", id)
		}
	}
	if rej.Msg == "" || strings.ContainsAny(rej.Msg, "\r\n") || len(rej.Msg) > 256 ||
		strings.ToValidUTF8(rej.Msg, "") != rej.Msg {
		t.Fatalf("message unfit for the Drover-Error header: %q", rej.Msg)
	}
}

func checkAccepted(t *testing.T, req subjects.TaskRequest) {
	t.Helper()
	if err := req.Validate(); err != nil {
		t.Fatalf("accepted an invalid request %+v: %v", req, err)
	}
	if req.MaxAttempts < 1 || req.MaxAttempts > subjects.MaxMaxAttempts {
		t.Fatalf("max_attempts %d", req.MaxAttempts)
	}
	if req.Type == "" {
		t.Fatalf("no type")
	}
	if _, err := subjects.SimControlsOf(req.Metadata); err != nil {
		t.Fatalf("accepted invalid sim controls: %v", err)
	}
	for _, id := range []string{req.Workflow, req.ID} {
		back, err := subjects.ParseToken(subjects.Token(id))
		if err != nil || back != id {
			t.Fatalf("token of %q does not round-trip: %q, %v", id, back, err)
		}
	}
}

// sameRequest compares two requests, metadata by JSON value rather than by
// bytes: encoding compacts it and escapes HTML characters.
func sameRequest(t *testing.T, a, b subjects.TaskRequest) bool {
	t.Helper()
	am, bm := a.Metadata, b.Metadata
	a.Metadata, b.Metadata = nil, nil
	if !reflect.DeepEqual(a, b) || len(am) != len(bm) {
		return false
	}
	for k, av := range am {
		bv, ok := bm[k]
		if !ok || !reflect.DeepEqual(jsonValue(t, av), jsonValue(t, bv)) {
			return false
		}
	}
	return true
}

func jsonValue(t *testing.T, raw json.RawMessage) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("metadata value %q: %v", raw, err)
	}
	return v
}

func BenchmarkDecodeTask(b *testing.B) {
	body := []byte(`{"id":"T1.1","workflow":"board-T1","scope":"Implement the audit logger with a JetStream publisher","verification":"Audit log persists across restarts and replays by subject","type":"feature","max_attempts":3,"metadata":{"owner":"team-a","labels":["audit","nats"],"priority":2}}`)
	if _, rej := subjects.DecodeTask(body, subjects.Limits{}); rej != nil {
		b.Fatal(rej)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, rej := subjects.DecodeTask(body, subjects.Limits{}); rej != nil {
			b.Fatal(rej)
		}
	}
}
