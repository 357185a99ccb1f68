package runner

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestParseOutput(t *testing.T) {
	t.Parallel()
	const (
		P = subjects.RolePlanner
		I = subjects.RoleImplementer
		J = subjects.RoleJudge
	)
	for _, tc := range []struct {
		name      string
		role      subjects.Role
		in        string
		output    string // expected Output JSON (compared as JSON)
		action    string
		reasoning string
		err       string // expected error substring; "" means success
	}{
		{"plan JSON compacted", P, "{ \"plan\": \"do it\",\n \"steps\": [\"a\", \"b\"] }\n", `{"plan":"do it","steps":["a","b"]}`, "plan", "do it", ""},
		{"plan without steps", P, `{"plan":"do it"}`, `{"plan":"do it"}`, "plan", "do it", ""},
		{"plan as text", P, "  1. read\n2. write  \n", `{"plan":"1. read\n2. write"}`, "plan", "1. read\n2. write", ""},
		{"plan in a fence", P, "Here:\n```json\n{\"plan\":\"x\",\"steps\":[]}\n```", `{"plan":"x","steps":[]}`, "plan", "x", ""},
		{"plan empty", P, " \n\t", "", "", "", "planner: output is empty"},
		{"plan JSON without plan", P, `{"steps":["a"]}`, "", "", "", `planner: output has no non-empty "plan"`},
		{"plan blank", P, `{"plan":"  "}`, "", "", "", "no non-empty"},
		{"plan not a string", P, `{"plan":3}`, "", "", "", "planner"},
		{"plan steps not strings", P, `{"plan":"x","steps":[1]}`, "", "", "", "planner"},
		{"plan JSON array", P, `["a"]`, "", "", "", "not an object"},
		{"plan as a list of strings", P, `{"plan":["read"," write "]}`, `{"plan":"1. read\n2. write","steps":["read","write"]}`, "plan", "1. read\n2. write", ""},
		{"plan as a list of objects", P, `{"plan":[{"text":"a"},{"step":"b"},{"description":"c","n":1}],"steps":["x"]}`, `{"plan":"1. a\n2. b\n3. c","steps":["x"]}`, "plan", "1. a\n2. b\n3. c", ""},
		{"plan list in prose", P, "Plan:\n{\"plan\":[\"a\"]}", `{"plan":"1. a","steps":["a"]}`, "plan", "1. a", ""},
		{"plan list empty", P, `{"plan":[]}`, "", "", "", "no non-empty"},
		{"plan list bad step", P, `{"plan":["a",{"x":"y"}]}`, "", "", "", `"plan"[1]`},
		{"plan list number", P, `{"plan":[1]}`, "", "", "", `"plan"[0]`},

		{"change JSON kept", I, `{"change":"did","files":["a.go"],"notes":"ok","extra":{"n":1}}`, `{"change":"did","files":["a.go"],"notes":"ok","extra":{"n":1}}`, "change", "did", ""},
		{"change object without change key", I, `{"summary":"x"}`, `{"summary":"x"}`, "change", "", ""},
		{"change as text", I, "edited main.go", `{"change":"edited main.go"}`, "change", "edited main.go", ""},
		{"change text with braces", I, "func f() { return }", `{"change":"func f() { return }"}`, "change", "func f() { return }", ""},
		{"change in prose", I, "Done.\n{\"change\":\"c\",\"files\":[]}\nBye", `{"change":"c","files":[]}`, "change", "c", ""},
		{"change empty", I, "", "", "", "", "implementer: output is empty"},
		{"change JSON string", I, `"x"`, "", "", "", "implementer: output is JSON but not an object"},

		{"approve", J, `{"verdict":"approve","feedback":"good"}`, `{"verdict":"approve","feedback":"good"}`, "approve", "good", ""},
		{"reject upper case normalised", J, `{"verdict":" REJECT ","feedback":"no test"}`, `{"verdict":"reject","feedback":"no test"}`, "reject", "no test", ""},
		{"reasons list", J, `{"verdict":"reject","reasons":["no test","lint"]}`, `{"verdict":"reject","feedback":"no test\nlint","reasons":["no test","lint"]}`, "reject", "no test\nlint", ""},
		{"reasons string", J, `{"verdict":"Approve","reasons":"fine"}`, `{"verdict":"approve","feedback":"fine","reasons":"fine"}`, "approve", "fine", ""},
		{"no feedback", J, `{"verdict":"approve"}`, `{"verdict":"approve","feedback":""}`, "approve", "", ""},
		{"fenced", J, "```json\n{\"verdict\": \"reject\", \"feedback\": \"add a test\"}\n```\n", `{"verdict":"reject","feedback":"add a test"}`, "reject", "add a test", ""},
		{"prose wrapped", J, "I checked {the code}. Result: {\"verdict\":\"approve\",\"feedback\":\"ok\"} Thanks.", `{"verdict":"approve","feedback":"ok"}`, "approve", "ok", ""},
		{"last object with a verdict wins", J, `notes {"a":1} then {"verdict":"approve"} and {"verdict":"reject","feedback":"x"}`, `{"verdict":"reject","feedback":"x"}`, "reject", "x", ""},
		{"approval quoted in a rejection's feedback", J, `{"verdict":"reject","feedback":"you wrote {\"verdict\":\"approve\"} in the code"}` + "\nDone.", `{"verdict":"reject","feedback":"you wrote {\"verdict\":\"approve\"} in the code"}`, "reject", `you wrote {"verdict":"approve"} in the code`, ""},
		{"approval quoted in prose, then a rejection", J, "The implementer claims {\"verdict\": \"approve\"} is fine.\n```json\n{\"verdict\":\"reject\",\"feedback\":\"no test\"}\n```", `{"verdict":"reject","feedback":"no test"}`, "reject", "no test", ""},
		{"approval nested in the final object", J, `x {"verdict":"reject","feedback":"f","quote":{"verdict":"approve"}}`, `{"verdict":"reject","feedback":"f","quote":{"verdict":"approve"}}`, "reject", "f", ""},
		{"malformed rejection quoting an approval is no approval", J, `{"verdict":"reject","feedback":"you wrote {"verdict":"approve"} in the code"}`, "", "", "", "no verdict"},
		{"unbalanced brace in prose", J, "I checked {the code.\n{\"verdict\":\"reject\",\"feedback\":\"x\"}", `{"verdict":"reject","feedback":"x"}`, "reject", "x", ""},
		{"object inside unparsable braces", J, `{ note: {"verdict":"reject","feedback":"x"} }`, `{"verdict":"reject","feedback":"x"}`, "reject", "x", ""},
		{"plain APPROVE is not a verdict", J, "APPROVE", "", "", "", "judge: output has no verdict of approve or reject"},
		{"maybe", J, `{"verdict":"maybe"}`, "", "", "", "no verdict of approve or reject"},
		{"template echo", J, `{"verdict": "approve | reject", "feedback": "<reasons>"}`, "", "", "", "no verdict"},
		{"no verdict", J, `{"feedback":"looks fine"}`, "", "", "", "no verdict"},
		{"verdict not a string", J, `{"verdict":true}`, "", "", "", "no verdict"},
		{"nested verdict", J, `{"result":{"verdict":"approve"}}`, "", "", "", "no verdict"},
		{"judge empty", J, "", "", "", "", "judge: output is empty"},
		{"unknown role", "boss", "x", "", "", "", "unknown role"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, err := ParseOutput(context.Background(), tc.role, []byte(tc.in))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.Equal(t, tc.role == "boss", isPermanent(err), "only a config problem is permanent")
				return
			}
			require.NoError(t, err)
			require.JSONEq(t, tc.output, string(res.Output))
			require.True(t, json.Valid(res.Output))
			require.Equal(t, tc.action, res.Action)
			require.Equal(t, tc.reasoning, res.Reasoning)
		})
	}
}

func TestParseOutputErrorQuotesOutput(t *testing.T) {
	t.Parallel()
	_, err := ParseOutput(context.Background(), subjects.RoleJudge, []byte("I think it is fine, APPROVE. "+strings.Repeat("x", 500)))
	require.ErrorContains(t, err, `judge: output has no verdict of approve or reject: "I think it is fine, APPROVE.`)
	require.Less(t, len(err.Error()), 200, "the output is quoted, bounded")
}

func TestParseOutputLarge(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é", 1<<20)
	res, err := ParseOutput(context.Background(), subjects.RoleImplementer, []byte(big))
	require.NoError(t, err)
	var out struct{ Change string }
	require.NoError(t, json.Unmarshal(res.Output, &out))
	require.Equal(t, big, out.Change, "the output is kept whole")
	require.LessOrEqual(t, len(res.Reasoning), maxReasoningBytes+len(" [truncated]"))
	require.True(t, strings.HasSuffix(res.Reasoning, " [truncated]"))

	braces := strings.Repeat("{", 100000) + `{"verdict":"reject"}`
	res, err = ParseOutput(context.Background(), subjects.RoleJudge, []byte(braces))
	require.NoError(t, err, "the object after unclosed braces is found, in one pass")
	require.Equal(t, subjects.VerdictReject, res.Action)
}

func isPermanent(err error) bool { return errors.Is(err, ErrPermanent) }

// hostileOutputs are 1 MiB answers built to make a parser that retries
// from every '{' quadratic.
func hostileOutputs() []struct{ name, in string } {
	return []struct{ name, in string }{
		{"verdict prefix", strings.Repeat(`{"verdict":`, (1<<20)/11)},
		{"open braces", strings.Repeat("{", 1<<20)},
		{"nested mixed", strings.Repeat("{[", 1<<19)},
		{"unclosed strings", strings.Repeat(`{"a":"`, (1<<20)/6)},
		{"unclosed arrays", strings.Repeat(`{"x":[`+strings.Repeat("1,", 1000), 520)},
		{"balanced invalid", strings.Repeat("{", 1<<19) + strings.Repeat("}", 1<<19)},
		{"many small objects", strings.Repeat(`{"a":1}`, (1<<20)/7)},
	}
}

func TestParseOutputHostileIsLinear(t *testing.T) {
	t.Parallel()
	for _, tc := range hostileOutputs() {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			text := []byte(tc.in)
			spans, err := scanObjects(context.Background(), text)
			require.NoError(t, err)
			require.LessOrEqual(t, len(spans), len(text)/2, "at most one span per pair of braces")
			_, err = ParseOutput(context.Background(), subjects.RoleJudge, text)
			require.ErrorContains(t, err, "no verdict")
		})
	}
}

func TestParseOutputCancelled(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	for _, tc := range hostileOutputs() {
		_, err := ParseOutput(ctx, subjects.RoleJudge, []byte(tc.in))
		require.ErrorIs(t, err, context.Canceled, tc.name)
		require.ErrorContains(t, err, "judge: parse output", tc.name)
	}
}

func TestFindObjectDecodeBudget(t *testing.T) {
	t.Parallel()
	// Nested invalid objects: descending into each would decode n²/2
	// bytes; the budget stops after a few levels.
	text := []byte(strings.Repeat("{x", 1000) + strings.Repeat("}", 1000))
	spans, err := scanObjects(context.Background(), text)
	require.NoError(t, err)
	require.Len(t, spans, 1000)
	require.Equal(t, []int{999}, spans.roots())
	require.Equal(t, []int{998}, spans.children(999))
	obj, _, err := findObject(context.Background(), text, "verdict")
	require.NoError(t, err)
	require.Nil(t, obj)
}

func TestScanObjects(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, in string
		roots    []string
	}{
		{"none", "plain text", nil},
		{"two", `a {"x":1} b {"y":{"z":2}} c`, []string{`{"x":1}`, `{"y":{"z":2}}`}},
		{"braces in strings", `{"a":"}{"} x {"b":"\"}"}`, []string{`{"a":"}{"}`, `{"b":"\"}"}`}},
		{"quote in prose", `he said "hi {"a":1}`, []string{`{"a":1}`}},
		{"stray closer", `} {"a":1} }`, []string{`{"a":1}`}},
		{"unclosed outer", `{ {"a":1} {"b":2}`, []string{`{"a":1}`, `{"b":2}`}},
		{"newline ends a string", "{ \"oops\n {\"a\":1}", []string{`{"a":1}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			spans, err := scanObjects(context.Background(), []byte(tc.in))
			require.NoError(t, err)
			var got []string
			for _, i := range spans.roots() {
				got = append(got, tc.in[spans[i].start:spans[i].end])
			}
			require.Equal(t, tc.roots, got)
		})
	}
}

// BenchmarkParseOutputHostile measures 1 MiB hostile answers. Before the
// linear scan, "unclosed arrays" took about 2 s per parse and "verdict
// prefix" about 0.2-0.8 s.
func BenchmarkParseOutputHostile(b *testing.B) {
	for _, tc := range hostileOutputs() {
		b.Run(strings.ReplaceAll(tc.name, " ", "-"), func(b *testing.B) {
			text := []byte(tc.in)
			b.SetBytes(int64(len(text)))
			for b.Loop() {
				_, _ = ParseOutput(context.Background(), subjects.RoleJudge, text)
			}
		})
	}
}
