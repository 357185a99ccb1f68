package subjects_test

import (
	"encoding/json"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// contractExample is the request body of the contract's "Submitting a task".
const contractExample = `{
  "id": "T1.1",
  "workflow": "board-T1",
  "scope": "Implement the audit logger",
  "verification": "Audit log persists across restarts",
  "type": "feature",
  "max_attempts": 3,
  "metadata": {"any": "json"}
}`

// minimal is the smallest valid request.
const minimal = `{"id":"T1","workflow":"wf","scope":"do it"}`

// withField returns minimal with one more member, raw JSON after the key.
func withField(key, raw string) string {
	return `{"id":"T1","workflow":"wf","scope":"do it",` + `"` + key + `":` + raw + `}`
}

func nested(depth int) string {
	return strings.Repeat("[", depth) + strings.Repeat("]", depth)
}

func TestDecodeTaskContractExample(t *testing.T) {
	t.Parallel()
	req, rej := subjects.DecodeTask([]byte(contractExample), subjects.Limits{})
	require.Nil(t, rej)
	assert.Equal(t, subjects.TaskRequest{
		ID:           "T1.1",
		Workflow:     "board-T1",
		Scope:        "Implement the audit logger",
		Verification: "Audit log persists across restarts",
		Type:         "feature",
		MaxAttempts:  3,
		Metadata:     map[string]json.RawMessage{"any": json.RawMessage(`"json"`)},
	}, req)
	assert.NoError(t, req.Validate())
}

func TestDecodeTaskDefaults(t *testing.T) {
	t.Parallel()
	req, rej := subjects.DecodeTask([]byte(minimal), subjects.Limits{})
	require.Nil(t, rej)
	assert.Equal(t, subjects.TaskRequest{
		ID:          "T1",
		Workflow:    "wf",
		Scope:       "do it",
		Type:        subjects.DefaultTaskType,
		MaxAttempts: subjects.DefaultMaxAttempts,
	}, req)
	assert.Equal(t, "task", req.Type)
	assert.Equal(t, 3, req.MaxAttempts)
	assert.Nil(t, req.Metadata)
}

func TestDecodeTaskAccepts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		body  string
		check func(t *testing.T, req subjects.TaskRequest)
	}{
		{"max_attempts 1", withField("max_attempts", "1"), func(t *testing.T, r subjects.TaskRequest) {
			assert.Equal(t, 1, r.MaxAttempts)
		}},
		{"max_attempts 10", withField("max_attempts", "10"), func(t *testing.T, r subjects.TaskRequest) {
			assert.Equal(t, 10, r.MaxAttempts)
		}},
		{"branch", withField("branch", `"feature/T1.3"`), func(t *testing.T, r subjects.TaskRequest) {
			assert.Equal(t, "feature/T1.3", r.Branch)
			assert.NotContains(t, r.Metadata, "unknown_fields")
		}},
		{"review instead", withField("review", `"instead"`), func(t *testing.T, r subjects.TaskRequest) {
			assert.Equal(t, subjects.ReviewInstead, r.Review)
			assert.NotContains(t, r.Metadata, "unknown_fields")
		}},
		{"review after_judge", withField("review", `"after_judge"`), func(t *testing.T, r subjects.TaskRequest) {
			assert.Equal(t, subjects.ReviewAfterJudge, r.Review)
		}},
		{"128-byte id", `{"id":"` + strings.Repeat("i", 128) + `","workflow":"wf","scope":"s"}`, func(t *testing.T, r subjects.TaskRequest) {
			assert.Len(t, r.ID, 128)
		}},
		{"escaped id", `{"id":"T1\u002e1","workflow":"a\/b","scope":"s"}`, func(t *testing.T, r subjects.TaskRequest) {
			assert.Equal(t, "T1.1", r.ID)
			assert.Equal(t, "a/b", r.Workflow)
		}},
		{"unicode id", `{"id":"tâche-日本","workflow":"wf","scope":"s"}`, func(t *testing.T, r subjects.TaskRequest) {
			assert.Equal(t, "tâche-日本", r.ID)
		}},
		{"white space around the body", " \n\t" + minimal + "\r\n ", func(t *testing.T, r subjects.TaskRequest) {
			assert.Equal(t, "T1", r.ID)
		}},
		{"empty metadata", withField("metadata", "{}"), func(t *testing.T, r subjects.TaskRequest) {
			assert.Empty(t, r.Metadata)
		}},
		{"depth 32 in metadata", withField("metadata", `{"a":`+nested(30)+`}`), func(t *testing.T, r subjects.TaskRequest) {
			assert.Contains(t, r.Metadata, "a")
		}},
		{"valid sim", withField("metadata", `{"sim":{"latency_ms":{"planner":0,"judge":5},"judge_rejects":1,"fail":{"role":"implementer","times":-1},"panic":"judge","hang":"planner"}}`), func(t *testing.T, r subjects.TaskRequest) {
			c, err := subjects.SimControlsOf(r.Metadata)
			require.NoError(t, err)
			assert.Equal(t, subjects.SimControls{
				LatencyMS:    map[subjects.Role]int{subjects.RolePlanner: 0, subjects.RoleJudge: 5},
				JudgeRejects: 1,
				Fail:         &subjects.SimFail{Role: subjects.RoleImplementer, Times: -1},
				Panic:        subjects.RoleJudge,
				Hang:         subjects.RolePlanner,
			}, c)
		}},
		{"scope with inner white space", withField("verification", `"  "`), func(t *testing.T, r subjects.TaskRequest) {
			assert.Equal(t, "  ", r.Verification)
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, rej := subjects.DecodeTask([]byte(tc.body), subjects.Limits{})
			require.Nil(t, rej, "body %s", tc.body)
			require.NoError(t, req.Validate())
			tc.check(t, req)
		})
	}
}

func TestDecodeTaskUnknownFields(t *testing.T) {
	t.Parallel()

	t.Run("kept in metadata.unknown_fields", func(t *testing.T) {
		t.Parallel()
		body := `{"id":"T1","workflow":"wf","scope":"s","priority":5,"labels":["a","b"],"metadata":{"any":"json"}}`
		req, rej := subjects.DecodeTask([]byte(body), subjects.Limits{})
		require.Nil(t, rej)
		assert.JSONEq(t, `"json"`, string(req.Metadata["any"]))
		assert.JSONEq(t, `{"priority":5,"labels":["a","b"]}`, string(req.Metadata["unknown_fields"]))
	})

	t.Run("metadata created for them", func(t *testing.T) {
		t.Parallel()
		req, rej := subjects.DecodeTask([]byte(withField("extra", `null`)), subjects.Limits{})
		require.Nil(t, rej)
		require.Len(t, req.Metadata, 1)
		assert.JSONEq(t, `{"extra":null}`, string(req.Metadata["unknown_fields"]))
	})

	t.Run("case variant of a known key", func(t *testing.T) {
		t.Parallel()
		body := `{"id":"T1","ID":"other","Workflow":"w2","workflow":"wf","scope":"s","SCOPE":"x"}`
		req, rej := subjects.DecodeTask([]byte(body), subjects.Limits{})
		require.Nil(t, rej)
		assert.Equal(t, "T1", req.ID)
		assert.Equal(t, "wf", req.Workflow)
		assert.Equal(t, "s", req.Scope)
		assert.JSONEq(t, `{"ID":"other","Workflow":"w2","SCOPE":"x"}`, string(req.Metadata["unknown_fields"]))
	})

	t.Run("no unknown fields, no key", func(t *testing.T) {
		t.Parallel()
		req, rej := subjects.DecodeTask([]byte(contractExample), subjects.Limits{})
		require.Nil(t, rej)
		assert.NotContains(t, req.Metadata, "unknown_fields")
	})

	t.Run("producer's own unknown_fields without unknown fields", func(t *testing.T) {
		t.Parallel()
		req, rej := subjects.DecodeTask([]byte(withField("metadata", `{"unknown_fields":{"x":1}}`)), subjects.Limits{})
		require.Nil(t, rej)
		assert.JSONEq(t, `{"x":1}`, string(req.Metadata["unknown_fields"]))
	})
}

func TestDecodeTaskRejects(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 129)
	for _, tc := range []struct {
		name   string
		body   string
		lim    subjects.Limits
		reason subjects.Reason
		// The IDs the rejection names: readable and valid, else empty.
		workflow, task string
	}{
		// Not JSON, or not one JSON object.
		{name: "empty body", body: ``, reason: subjects.ReasonInvalidJSON},
		{name: "white space only", body: " \n", reason: subjects.ReasonInvalidJSON},
		{name: "truncated", body: `{"id":"T1","workflow":"wf"`, reason: subjects.ReasonInvalidJSON},
		{name: "not JSON", body: `id=T1`, reason: subjects.ReasonInvalidJSON},
		{name: "single quotes", body: `{'id':'T1'}`, reason: subjects.ReasonInvalidJSON},
		{name: "trailing comma", body: `{"id":"T1","workflow":"wf","scope":"s",}`, reason: subjects.ReasonInvalidJSON},
		{name: "comment", body: `{"id":"T1" /* c */,"workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidJSON},
		{name: "array", body: `[` + minimal + `]`, reason: subjects.ReasonInvalidJSON},
		{name: "string", body: `"` + minimal + `"`, reason: subjects.ReasonInvalidJSON},
		{name: "number", body: `42`, reason: subjects.ReasonInvalidJSON},
		{name: "null", body: `null`, reason: subjects.ReasonInvalidJSON},
		{name: "true", body: `true`, reason: subjects.ReasonInvalidJSON},
		{name: "trailing object", body: minimal + `{}`, reason: subjects.ReasonInvalidJSON},
		{name: "two requests", body: minimal + "\n" + minimal, reason: subjects.ReasonInvalidJSON},
		{name: "trailing garbage", body: minimal + `x`, reason: subjects.ReasonInvalidJSON},
		{name: "trailing number", body: minimal + ` 1`, reason: subjects.ReasonInvalidJSON},
		// A branch git would refuse is refused at admission.
		{name: "branch with ..", body: withField("branch", `"a..b"`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "branch with space", body: withField("branch", `"a b"`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "branch ends .lock", body: withField("branch", `"x/y.lock"`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "branch empty", body: withField("branch", `""`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "branch not a string", body: withField("branch", `1`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "review unknown", body: withField("review", `"later"`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "review empty", body: withField("review", `""`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "review not a string", body: withField("review", `true`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "trailing NUL", body: minimal + "\x00", reason: subjects.ReasonInvalidJSON},
		{name: "invalid UTF-8 in a string", body: `{"id":"T` + "\xff" + `","workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidJSON},
		{name: "invalid UTF-8 outside strings", body: minimal + "\xc3", reason: subjects.ReasonInvalidJSON},
		{name: "UTF-8 BOM", body: "\xef\xbb\xbf" + minimal, reason: subjects.ReasonInvalidJSON},
		{name: "raw control character in a string", body: `{"id":"T1","workflow":"wf","scope":"a` + "\n" + `b"}`, reason: subjects.ReasonInvalidJSON},

		// Duplicated keys, at any level.
		{name: "duplicate id", body: `{"id":"T1","id":"T2","workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidJSON},
		{name: "duplicate id, same value", body: `{"id":"T1","id":"T1","workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidJSON},
		{name: "duplicate via escape", body: `{"id":"T1","\u0069d":"T2","workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidJSON},
		{name: "duplicate unknown field", body: withField("x", `1,"x":2`), reason: subjects.ReasonInvalidJSON},
		{name: "duplicate in metadata", body: withField("metadata", `{"a":1,"a":2}`), reason: subjects.ReasonInvalidJSON},
		{name: "duplicate in metadata.sim", body: withField("metadata", `{"sim":{"panic":"judge","panic":"planner"}}`), reason: subjects.ReasonInvalidJSON},
		{name: "duplicate deep in an array", body: withField("metadata", `{"a":[{"b":[{"c":1,"c":1}]}]}`), reason: subjects.ReasonInvalidJSON},

		// Nesting.
		{name: "nesting beyond the default depth", body: withField("metadata", `{"a":`+nested(31)+`}`), reason: subjects.ReasonInvalidJSON},
		{name: "nesting beyond a custom depth", body: withField("metadata", `{"a":[[]]}`), lim: subjects.Limits{MaxDepth: 3}, reason: subjects.ReasonInvalidJSON},
		{name: "very deep nesting", body: nested(100000), reason: subjects.ReasonInvalidJSON},

		// Size.
		{name: "too large", body: minimal, lim: subjects.Limits{MaxBytes: len(minimal) - 1}, reason: subjects.ReasonTooLarge},
		{name: "too large for the default limit", body: withField("x", `"`+strings.Repeat("a", subjects.DefaultMaxBodyBytes)+`"`), reason: subjects.ReasonTooLarge},
		{name: "too large is checked before JSON", body: `not json at all`, lim: subjects.Limits{MaxBytes: 4}, reason: subjects.ReasonTooLarge},

		// Required fields.
		{name: "missing id", body: `{"workflow":"wf","scope":"s"}`, reason: subjects.ReasonMissingField, workflow: "wf"},
		{name: "missing workflow", body: `{"id":"T1","scope":"s"}`, reason: subjects.ReasonMissingField, task: "T1"},
		{name: "missing scope", body: `{"id":"T1","workflow":"wf"}`, reason: subjects.ReasonMissingField, workflow: "wf", task: "T1"},
		{name: "empty object", body: `{}`, reason: subjects.ReasonMissingField},
		{name: "ID instead of id", body: `{"ID":"T1","workflow":"wf","scope":"s"}`, reason: subjects.ReasonMissingField, workflow: "wf"},
		{name: "Workflow instead of workflow", body: `{"id":"T1","Workflow":"wf","scope":"s"}`, reason: subjects.ReasonMissingField, task: "T1"},
		{name: "Scope instead of scope", body: `{"id":"T1","workflow":"wf","Scope":"s"}`, reason: subjects.ReasonMissingField, workflow: "wf", task: "T1"},
		{name: "required field only in metadata", body: `{"workflow":"wf","scope":"s","metadata":{"id":"T1"}}`, reason: subjects.ReasonMissingField, workflow: "wf"},

		// Blank values.
		{name: "blank scope", body: `{"id":"T1","workflow":"wf","scope":"  \t\n "}`, reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "empty scope", body: `{"id":"T1","workflow":"wf","scope":""}`, reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "scope of Unicode white space", body: `{"id":"T1","workflow":"wf","scope":"\u00a0\u2003"}`, reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "empty id", body: `{"id":"","workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidValue, workflow: "wf"},
		{name: "empty workflow", body: `{"id":"T1","workflow":"","scope":"s"}`, reason: subjects.ReasonInvalidValue, task: "T1"},

		// Invalid IDs.
		{name: "id with a space", body: `{"id":"T 1","workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidValue, workflow: "wf"},
		{name: "id with a tab escape", body: `{"id":"T\t1","workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidValue, workflow: "wf"},
		{name: "id with a no-break space", body: `{"id":"T\u00a01","workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidValue, workflow: "wf"},
		{name: "id with an em space", body: "{\"id\":\"T\u20031\",\"workflow\":\"wf\",\"scope\":\"s\"}", reason: subjects.ReasonInvalidValue, workflow: "wf"},
		{name: "id with NUL", body: `{"id":"T\u0000","workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidValue, workflow: "wf"},
		{name: "id with DEL", body: `{"id":"T\u007f","workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidValue, workflow: "wf"},
		{name: "reserved id", body: `{"id":"_","workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidValue, workflow: "wf"},
		{name: "reserved workflow", body: `{"id":"T1","workflow":"_","scope":"s"}`, reason: subjects.ReasonInvalidValue, task: "T1"},
		{name: "129-byte id", body: `{"id":"` + long + `","workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidValue, workflow: "wf"},
		{name: "129-byte workflow", body: `{"id":"T1","workflow":"` + long + `","scope":"s"}`, reason: subjects.ReasonInvalidValue, task: "T1"},
		{name: "both IDs invalid", body: `{"id":"_","workflow":" ","scope":"s"}`, reason: subjects.ReasonInvalidValue},

		// max_attempts.
		{name: "max_attempts 0", body: withField("max_attempts", `0`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "max_attempts 11", body: withField("max_attempts", `11`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "max_attempts -1", body: withField("max_attempts", `-1`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "max_attempts -0", body: withField("max_attempts", `-0`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "max_attempts string", body: withField("max_attempts", `"3"`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "max_attempts fraction", body: withField("max_attempts", `1.5`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "max_attempts exponent", body: withField("max_attempts", `1e400`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "max_attempts huge integer", body: withField("max_attempts", `123456789012345678901234567890`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "max_attempts wraps to 3", body: withField("max_attempts", `18446744073709551619`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "max_attempts null", body: withField("max_attempts", `null`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "max_attempts bool", body: withField("max_attempts", `true`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "max_attempts array", body: withField("max_attempts", `[3]`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},

		// Wrong types.
		{name: "id number", body: `{"id":1,"workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidValue, workflow: "wf"},
		{name: "id null", body: `{"id":null,"workflow":"wf","scope":"s"}`, reason: subjects.ReasonInvalidValue, workflow: "wf"},
		{name: "workflow bool, id still named", body: `{"id":"T1","workflow":true,"scope":"s"}`, reason: subjects.ReasonInvalidValue, task: "T1"},
		{name: "workflow object", body: `{"id":"T1","workflow":{"id":"wf"},"scope":"s"}`, reason: subjects.ReasonInvalidValue, task: "T1"},
		{name: "scope array", body: `{"id":"T1","workflow":"wf","scope":["s"]}`, reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "scope null", body: `{"id":"T1","workflow":"wf","scope":null}`, reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "verification number", body: withField("verification", `1`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "type number", body: withField("type", `5`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "type with a space", body: withField("type", `"new feature"`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "type too long", body: withField("type", `"`+strings.Repeat("t", subjects.MaxTypeBytes+1)+`"`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "metadata array", body: withField("metadata", `[]`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "metadata string", body: withField("metadata", `"x"`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "metadata null", body: withField("metadata", `null`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},

		// metadata.unknown_fields is taken.
		{name: "unknown_fields in metadata and unknown fields", body: `{"id":"T1","workflow":"wf","scope":"s","x":1,"metadata":{"unknown_fields":{}}}`, reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},

		// metadata.sim.
		{name: "sim string", body: withField("metadata", `{"sim":"fast"}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "sim judge_rejects string", body: withField("metadata", `{"sim":{"judge_rejects":"1"}}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "sim judge_rejects negative", body: withField("metadata", `{"sim":{"judge_rejects":-1}}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "sim latency not a number", body: withField("metadata", `{"sim":{"latency_ms":{"judge":"slow"}}}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "sim latency negative", body: withField("metadata", `{"sim":{"latency_ms":{"judge":-5}}}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "sim latency of no role", body: withField("metadata", `{"sim":{"latency_ms":{"jduge":5}}}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "sim fail times string", body: withField("metadata", `{"sim":{"fail":{"role":"judge","times":"2"}}}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "sim fail times below -1", body: withField("metadata", `{"sim":{"fail":{"role":"judge","times":-2}}}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "sim fail of no role", body: withField("metadata", `{"sim":{"fail":{"role":"system","times":1}}}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "sim fail without role", body: withField("metadata", `{"sim":{"fail":{"times":1}}}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "sim fail unknown key", body: withField("metadata", `{"sim":{"fail":{"role":"judge","time":1}}}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "sim panic of no role", body: withField("metadata", `{"sim":{"panic":"jduge"}}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "sim hang number", body: withField("metadata", `{"sim":{"hang":1}}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "sim unknown key", body: withField("metadata", `{"sim":{"judge_reject":1}}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
		{name: "sim key in another case", body: withField("metadata", `{"sim":{"Panic":"judge"}}`), reason: subjects.ReasonInvalidValue, workflow: "wf", task: "T1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			req, rej := subjects.DecodeTask([]byte(tc.body), tc.lim)
			require.NotNil(t, rej, "accepted %+v", req)
			assert.Equal(t, subjects.TaskRequest{}, req)
			assert.Equal(t, tc.reason, rej.Reason, rej.Error())
			assert.Equal(t, tc.workflow, rej.Workflow, "Workflow")
			assert.Equal(t, tc.task, rej.Task, "Task")
			assert.NotEmpty(t, rej.Msg)
			assert.Equal(t, string(tc.reason)+": "+rej.Msg, rej.Error())
			assertHeaderSafe(t, rej.Msg)
		})
	}
}

// assertHeaderSafe checks that a rejection message can go into the
// Drover-Error header as it is.
func assertHeaderSafe(t testing.TB, msg string) {
	t.Helper()
	assert.NotContains(t, msg, "\n")
	assert.NotContains(t, msg, "\r")
	assert.LessOrEqual(t, len(msg), 256)
	assert.Equal(t, msg, strings.ToValidUTF8(msg, ""), "not valid UTF-8: %q", msg)
}

// A rejection's message never quotes a long or multi-line body at length.
func TestDecodeTaskRejectMessageBounded(t *testing.T) {
	t.Parallel()
	key := strings.Repeat("k\\n", 1000)
	for _, body := range []string{
		withField("metadata", `{"`+key+`":1,"`+key+`":2}`),
		withField("max_attempts", "{\n\"a\":\r\n"+strings.Repeat("1", 1000)+"}"),
		withField("metadata", `{"sim":{"judge_rejects":1`+strings.Repeat("0", 5000)+`}}`),
		withField("type", `"`+strings.Repeat("é", 1000)+`"`),
		withField("metadata", `{"`+strings.Repeat("日", 100)+`":[{"a":1,"a":1}]}`),
	} {
		_, rej := subjects.DecodeTask([]byte(body), subjects.Limits{})
		require.NotNil(t, rej)
		assertHeaderSafe(t, rej.Msg)
	}
}

// A long key above a long array must not cost time quadratic in the body.
// Not parallel: it reads the process-wide allocation counter.
func TestDecodeTaskLinearTime(t *testing.T) {
	key := strings.Repeat("k", 200<<10)
	body := []byte(`{"` + key + `":[` + strings.Repeat("0,", 100<<10) + `0]}`)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, rej := subjects.DecodeTask(body, subjects.Limits{})
	runtime.ReadMemStats(&after)
	require.NotNil(t, rej)
	assert.Equal(t, subjects.ReasonMissingField, rej.Reason)
	// Building the path eagerly allocated about 20 GB here.
	alloc := after.TotalAlloc - before.TotalAlloc
	assert.Less(t, alloc, uint64(64<<20), "allocated %d bytes for a %d-byte body", alloc, len(body))
}

func TestTaskRequestValidate(t *testing.T) {
	t.Parallel()
	valid := subjects.TaskRequest{ID: "T1.1", Workflow: "board-T1", Scope: "s"}
	for _, tc := range []struct {
		name  string
		edit  func(r *subjects.TaskRequest)
		field string // named in the error; "" when valid
	}{
		{"valid", func(r *subjects.TaskRequest) {}, ""},
		{"all fields", func(r *subjects.TaskRequest) {
			r.Verification, r.Type, r.MaxAttempts = "v", "feature", 10
			r.Metadata = map[string]json.RawMessage{"a": json.RawMessage(`1`)}
		}, ""},
		{"max_attempts 0 means the default", func(r *subjects.TaskRequest) { r.MaxAttempts = 0 }, ""},
		{"64-byte type", func(r *subjects.TaskRequest) { r.Type = strings.Repeat("t", 64) }, ""},
		{"empty workflow", func(r *subjects.TaskRequest) { r.Workflow = "" }, "workflow"},
		{"reserved workflow", func(r *subjects.TaskRequest) { r.Workflow = "_" }, "workflow"},
		{"empty id", func(r *subjects.TaskRequest) { r.ID = "" }, "id"},
		{"id with a space", func(r *subjects.TaskRequest) { r.ID = "a b" }, "id"},
		{"id with U+2003", func(r *subjects.TaskRequest) { r.ID = "a\u2003b" }, "id"},
		{"129-byte id", func(r *subjects.TaskRequest) { r.ID = strings.Repeat("x", 129) }, "id"},
		{"invalid UTF-8 id", func(r *subjects.TaskRequest) { r.ID = "\xff" }, "id"},
		{"empty scope", func(r *subjects.TaskRequest) { r.Scope = "" }, "scope"},
		{"blank scope", func(r *subjects.TaskRequest) { r.Scope = " \u00a0\n" }, "scope"},
		{"type with a space", func(r *subjects.TaskRequest) { r.Type = "a b" }, "type"},
		{"reserved type", func(r *subjects.TaskRequest) { r.Type = "_" }, "type"},
		{"65-byte type", func(r *subjects.TaskRequest) { r.Type = strings.Repeat("t", 65) }, "type"},
		{"max_attempts 11", func(r *subjects.TaskRequest) { r.MaxAttempts = 11 }, "max_attempts"},
		{"max_attempts -1", func(r *subjects.TaskRequest) { r.MaxAttempts = -1 }, "max_attempts"},
	} {
		r := valid
		tc.edit(&r)
		err := r.Validate()
		if tc.field == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		if assert.Error(t, err, tc.name) {
			assert.True(t, strings.HasPrefix(err.Error(), tc.field+":"), "%s: %v", tc.name, err)
		}
	}
}

func TestWithDefaults(t *testing.T) {
	t.Parallel()
	r := subjects.TaskRequest{ID: "T1", Workflow: "wf", Scope: "s"}.WithDefaults()
	assert.Equal(t, "task", r.Type)
	assert.Equal(t, 3, r.MaxAttempts)

	r = subjects.TaskRequest{Type: "bug", MaxAttempts: 7}.WithDefaults()
	assert.Equal(t, "bug", r.Type)
	assert.Equal(t, 7, r.MaxAttempts)
}

// What a Go producer builds and validates, a worker decodes to the same.
func TestValidRequestRoundTrip(t *testing.T) {
	t.Parallel()
	in := subjects.TaskRequest{
		ID: "T1.1", Workflow: "board-T1", Scope: "Implement it", Verification: "It works",
		Type: "feature", MaxAttempts: 5,
		Metadata: map[string]json.RawMessage{"any": json.RawMessage(`{"nested":[1,2]}`)},
	}
	require.NoError(t, in.Validate())
	body, err := json.Marshal(in)
	require.NoError(t, err)
	out, rej := subjects.DecodeTask(body, subjects.Limits{})
	require.Nil(t, rej)
	assert.Equal(t, in, out)
}
