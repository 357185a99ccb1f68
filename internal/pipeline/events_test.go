package pipeline

import (
	"encoding/json"
	"math"
	"testing"

	"github.com/stretchr/testify/require"
)

// The event inputs write what json.Marshal writes for the maps they stand
// for, byte for byte: the events' bytes did not change.
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
