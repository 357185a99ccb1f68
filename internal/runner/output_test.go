package runner

import (
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
		{"first object with a verdict wins", J, `notes {"a":1} then {"verdict":"reject","feedback":"x"} and {"verdict":"approve"}`, `{"verdict":"reject","feedback":"x"}`, "reject", "x", ""},
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
			res, err := ParseOutput(tc.role, []byte(tc.in))
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
	_, err := ParseOutput(subjects.RoleJudge, []byte("I think it is fine, APPROVE. "+strings.Repeat("x", 500)))
	require.ErrorContains(t, err, `judge: output has no verdict of approve or reject: "I think it is fine, APPROVE.`)
	require.Less(t, len(err.Error()), 200, "the output is quoted, bounded")
}

func TestParseOutputLarge(t *testing.T) {
	t.Parallel()
	big := strings.Repeat("é", 1<<20)
	res, err := ParseOutput(subjects.RoleImplementer, []byte(big))
	require.NoError(t, err)
	var out struct{ Change string }
	require.NoError(t, json.Unmarshal(res.Output, &out))
	require.Equal(t, big, out.Change, "the output is kept whole")
	require.LessOrEqual(t, len(res.Reasoning), maxReasoningBytes+len(" [truncated]"))
	require.True(t, strings.HasSuffix(res.Reasoning, " [truncated]"))

	braces := strings.Repeat("{", 100000) + `{"verdict":"approve"}`
	_, err = ParseOutput(subjects.RoleJudge, []byte(braces))
	require.Error(t, err, "the scan for an embedded object is bounded")
}

func isPermanent(err error) bool { return errors.Is(err, ErrPermanent) }
