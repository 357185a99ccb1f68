package subjects

import (
	"encoding/json"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

var plainSeeds = []string{
	`{"id":"T1.1","workflow":"board-T1","scope":"Implement the audit logger","verification":"replays by subject","type":"feature","max_attempts":3,"metadata":{"owner":"team-a","labels":["audit","nats"],"priority":2}}`,
	`{"id":"t1","workflow":"wf","scope":"s"}`,
	` { "id" : "t1" , "workflow" : "wf" , "scope" : "s" , "metadata" : { "a" : [ 1 , {"b" : null} ] , "c" : "d" } } `,
	`{"id":"t1","workflow":"wf","scope":"s","branch":"drover/wf/t1","review":"after_judge"}`,
	`{"id":"t1","workflow":"wf","scope":"s","metadata":{"sim":{"latency_ms":{"planner":1},"judge_rejects":1,"fail":{"role":"implementer","times":2},"panic":"judge","hang":"implementer"}}}`,
	`{"id":"t1","workflow":"wf","scope":"s","metadata":{}}`,
	`{}`,
	`{"id":"","workflow":"wf","scope":"s"}`,
	`{"id":"t1","workflow":"wf","scope":"  "}`,
	`{"id":"t 1","workflow":"wf","scope":"s"}`,
	`{"id":"t1","workflow":"wf","scope":"s","type":"has space"}`,
	`{"id":"t1","workflow":"wf","scope":"s","branch":""}`,
	`{"id":"t1","workflow":"wf","scope":"s","review":"sometimes"}`,
	`{"id":"t1","workflow":"wf","scope":"s","max_attempts":0}`,
	`{"id":"t1","workflow":"wf","scope":"s","max_attempts":"3"}`,
	`{"id":"t1","workflow":"wf","scope":"s","max_attempts":3.0}`,
	`{"id":"t\u0031","workflow":"wf","scope":"s"}`,
	`{"\u0069d":"t1","workflow":"wf","scope":"s"}`,
	`{"id":"t1","workflow":"wf","scope":"s","ID":"t2"}`,
	`{"id":"t1","workflow":"wf","scope":null}`,
	`{"id":"t1","workflow":"wf","scope":"s","metadata":null}`,
	`{"id":"t1","workflow":"wf","scope":"s","metadata":{"unknown_fields":1}}`,
	`{"id":"t1","workflow":"wf","scope":"s","metadata":{"sim":{"panic":"jduge"}}}`,
	`{"id":"t1","workflow":"wf","scope":"s","metadata":{"\u0061":1}}`,
	"{\"id\":\"t1\",\"workflow\":\"wf\",\"scope\":\"caf\u00e9 <&> \u2028\"}",
}

// Whatever decodePlain reads, encoding/json reads the same, to the byte,
// and the two reject alike what follows; what it does not read is not
// its to decide.
func FuzzDecodePlain(f *testing.F) {
	for _, s := range plainSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if utf8.Valid(body) {
			plainAgrees(t, body)
		}
	})
}

// plainAgrees reports whether body, valid UTF-8, is read by decodePlain,
// and fails t unless what it reads decodeFields reads the same, to the
// rejection.
func plainAgrees(t *testing.T, body []byte) bool {
	t.Helper()
	if !strictJSON(body, DefaultMaxDepth) { // checkStrict's, then decodeFields'
		return false
	}
	req, present, ok := decodePlain(body)
	if !ok {
		return false
	}
	gotReq, gotRej := finishTask(req, present)
	wantReq, wantRej := decodeFields(body)
	require.Equal(t, wantRej, gotRej)
	require.Equal(t, wantReq, gotReq)
	return true
}

// decodePlain reads what producers write, and leaves to decodeFields each
// body whose reading takes more than reading.
func TestDecodePlain(t *testing.T) {
	t.Parallel()
	produced, err := EncodeTask(&TaskRequest{
		ID: "t1", Workflow: "wf", Scope: "s", Verification: "v", Type: "feature", MaxAttempts: 2,
		Branch: "drover/wf/t1", Review: ReviewAfterJudge,
		Metadata: map[string]json.RawMessage{"owner": json.RawMessage(`"team-a"`), "n": json.RawMessage(`[1,{"a":null}]`)},
	})
	require.NoError(t, err)
	for _, tc := range []struct {
		name string
		body string
		read bool
	}{
		{"what a producer writes", string(produced), true},
		{"white space between tokens", plainSeeds[2], true},
		{"an empty object (rejected later, for its missing fields)", `{}`, true},
		{"an escape in a string", `{"id":"t\u0031","workflow":"wf","scope":"s"}`, false},
		{"an escape in a key", `{"\u0069d":"t1","workflow":"wf","scope":"s"}`, false},
		{"an escape in a metadata key", plainSeeds[23], false},
		{"an unknown field", `{"id":"t1","workflow":"wf","scope":"s","ID":"t2"}`, false},
		{"a field that is not a string", `{"id":"t1","workflow":"wf","scope":null}`, false},
		{"max_attempts as a string", `{"id":"t1","workflow":"wf","scope":"s","max_attempts":"3"}`, false},
		{"max_attempts not whole", `{"id":"t1","workflow":"wf","scope":"s","max_attempts":3.0}`, false},
		{"max_attempts out of range", `{"id":"t1","workflow":"wf","scope":"s","max_attempts":11}`, false},
		{"metadata that is not an object", `{"id":"t1","workflow":"wf","scope":"s","metadata":null}`, false},
		{"sim controls that are not valid", plainSeeds[22], false},
		{"not an object", `["id"]`, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.read, plainAgrees(t, []byte(tc.body)))
		})
	}
}
