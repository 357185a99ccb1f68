package runner

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestSimOutputsAreJSONMarshal(t *testing.T) {
	for typ, fields := range map[reflect.Type]int{
		reflect.TypeFor[simPlan](): 2, reflect.TypeFor[simChange](): 3, reflect.TypeFor[simVerdict](): 3,
	} {
		require.Equal(t, fields, typ.NumField(), "%s.appendJSON writes %d fields: teach it the new one, then this number", typ, fields)
	}
	for _, out := range []simOut{
		simPlan{},
		simPlan{Plan: "feature T1: add <b> & \u2028", Steps: []string{"understand: x", "verify: \"y\" \\ \t"}},
		simPlan{Plan: "p", Steps: []string{}},
		simChange{},
		simChange{Change: "attempt 2 of T1 following plan 0a1b2c3d4e5f", Attempt: 2, Addresses: "line\nbreak \xff"},
		simChange{Attempt: -7},
		simVerdict{Verdict: "approve", Feedback: "attempt 1 approved"},
		simVerdict{Verdict: "reject", Feedback: "<not yet>", Diff: " a.go | 2 +-\n"},
	} {
		requireSimOutIsMarshal(t, out)
	}
}

// A sim output is written in one allocation, its buffer.
func TestSimOutputWritesByHand(t *testing.T) {
	v := simVerdict{Verdict: "approve", Feedback: "attempt 1 approved: the tests pass shown by change 0a1b2c3d4e5f"}
	require.InDelta(t, 1, testing.AllocsPerRun(100, func() { simSink = v.appendJSON(make([]byte, 0, simOutputCap)) }), 0)
}

// simSink keeps an output on the heap, as a result does.
var simSink []byte

func FuzzSimOutputs(f *testing.F) {
	f.Add("plan", "step", "change", 1, "feedback", "verdict", "diff")
	f.Add("<", "\u2029", "\xff", -1, "", "&", "")
	f.Fuzz(func(t *testing.T, plan, step, change string, attempt int, feedback, verdict, diff string) {
		for _, out := range []simOut{
			simPlan{Plan: plan, Steps: []string{step, plan}},
			simChange{Change: change, Attempt: attempt, Addresses: feedback},
			simVerdict{Verdict: verdict, Feedback: feedback, Diff: diff},
		} {
			requireSimOutIsMarshal(t, out)
		}
	})
}

func requireSimOutIsMarshal(t *testing.T, out simOut) {
	t.Helper()
	want, err := json.Marshal(out)
	require.NoError(t, err)
	require.Equal(t, string(want), string(out.appendJSON(nil)), "%#v", out)
}

func BenchmarkSimOutput(b *testing.B) {
	p := simPlan{Plan: "feature T17: add a --dry-run flag", Steps: []string{"understand: add a --dry-run flag", "implement: add a --dry-run flag", "verify: go test ./..."}}
	b.Run("hand", func(b *testing.B) {
		for b.Loop() {
			simSink = p.appendJSON(make([]byte, 0, simOutputCap))
		}
	})
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			simSink, _ = json.Marshal(p)
		}
	})
}
