package pipeline

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// The hand-written event inputs write what json.Marshal writes for the
// maps they stand for, byte for byte: the events' bytes did not change.
func TestEventInputsAreJSONMarshal(t *testing.T) {
	for _, tc := range []struct {
		attempt       int
		key, feedback string
	}{
		{1, "planner.abc", ""},
		{3, "implementer.<&>", "the test \"fails\"\n\u2028 \xff"},
		{-1, "", "x"},
	} {
		requireRoleInput(t, tc.attempt, tc.key, tc.feedback)
	}
	for _, tc := range []struct {
		queue string
		seq   uint64
	}{{"bench", 0}, {"q<1>", math.MaxUint64}, {"", 7}} {
		requireDeliveryMetadata(t, tc.queue, tc.seq)
	}
}

func FuzzEventInputs(f *testing.F) {
	f.Add(2, "judge.k", "reject: <b>", uint64(9))
	f.Fuzz(func(t *testing.T, attempt int, key, text string, seq uint64) {
		requireRoleInput(t, attempt, key, text)
		requireDeliveryMetadata(t, text, seq)
	})
}

func requireRoleInput(t *testing.T, attempt int, key, feedback string) {
	t.Helper()
	m := map[string]any{"cache_key": key, "attempt": attempt}
	if feedback != "" {
		m["feedback"] = feedback
	}
	want, err := json.Marshal(m)
	require.NoError(t, err)
	require.Equal(t, string(want), string(roleInput(attempt, key, feedback)))
}

func requireDeliveryMetadata(t *testing.T, queue string, seq uint64) {
	t.Helper()
	want, err := json.Marshal(map[string]any{"queue": queue, "stream_seq": seq})
	require.NoError(t, err)
	require.Equal(t, string(want), string(deliveryMetadata(queue, seq)))
}

func TestApprovedResultIsJSONMarshal(t *testing.T) {
	for _, tc := range []struct {
		change, verdict json.RawMessage
		round           int
	}{
		{json.RawMessage(`{"change":"attempt 1 of T1"}`), json.RawMessage(`{"verdict":"approve","feedback":"<ok>"}`), 1},
		{json.RawMessage(`{"change":"x"}`), nil, 3},
		{nil, nil, 0},
		{json.RawMessage(`"<b>"`), json.RawMessage(`{ "spaced": 1 }`), -2},
		{json.RawMessage(`[1,`), json.RawMessage(`{}`), 1},
		{json.RawMessage{}, nil, 1},
	} {
		requireApprovedResult(t, tc.change, tc.verdict, tc.round)
	}
}

func FuzzApprovedResult(f *testing.F) {
	f.Add([]byte(`{"change":"c"}`), []byte(`{"verdict":"approve"}`), 1)
	f.Add([]byte(` [1]`), []byte(nil), -1)
	f.Fuzz(func(t *testing.T, change, verdict []byte, round int) {
		requireApprovedResult(t, change, verdict, round)
	})
}

// requireApprovedResult holds approvedResult to json.Marshal of the map
// deliverApproved builds: the same bytes, or false where json.Marshal
// has to compact, escape or refuse a raw field.
func requireApprovedResult(t *testing.T, change, verdict json.RawMessage, round int) {
	t.Helper()
	fields := map[string]any{"change": change, "attempts": round}
	if verdict != nil {
		fields["verdict"] = verdict
	}
	want, err := json.Marshal(fields)
	got, ok := approvedResult(change, verdict, round)
	if !ok {
		_, changeOK := subjects.AppendRawJSON(nil, change)
		_, verdictOK := subjects.AppendRawJSON(nil, verdict)
		require.False(t, changeOK && (verdict == nil || verdictOK), "fields in json.Marshal's form are written by hand")
		return
	}
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

func BenchmarkApprovedResult(b *testing.B) {
	change := json.RawMessage(`{"change":"attempt 1 of T17 following plan 0a1b2c3d4e5f","attempt":1,"addresses":""}`)
	verdict := json.RawMessage(`{"verdict":"approve","feedback":"attempt 1 approved: go test ./... shown by change 5e4d3c2b1a0f"}`)
	b.Run("hand", func(b *testing.B) {
		for b.Loop() {
			_, _ = approvedResult(change, verdict, 1)
		}
	})
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			_ = mustJSON(map[string]any{"change": change, "attempts": 1, "verdict": verdict})
		}
	})
}
