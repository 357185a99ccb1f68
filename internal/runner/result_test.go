package runner

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEncodeResultIsJSONMarshal(t *testing.T) {
	encoded := 0
	for f := range reflect.TypeFor[Result]().Fields() {
		if f.Tag.Get("json") != "-" {
			encoded++
		}
	}
	require.Equal(t, 4, encoded,
		"EncodeResult writes Result's four encoded fields: teach it the new one, then this number")
	for _, r := range []Result{
		{},
		{Output: json.RawMessage(`{"plan":["a","b"]}`), Action: "planned", Reasoning: "one step"},
		{Output: json.RawMessage(`{ "spaced": true }`), Action: "a"},
		{Output: json.RawMessage(`"<html> & \u2028"`), Action: "<b>", Reasoning: "line\nbreak \u2028 \xff"},
		{Output: json.RawMessage(`null`), Reasoning: "\"quoted\" \\ \t"},
		{Output: json.RawMessage(`[1,2`), Action: "bad output"},
		{Output: json.RawMessage{}, Action: "empty, not nil"},
		{Output: json.RawMessage(`{}`), Action: "approve", Metadata: map[string]any{"tokens": 12, "model": "m"}},
	} {
		requireEncodeIsMarshal(t, r)
	}
}

// A result with no metadata and a compact output is written by hand: one
// allocation, its buffer (json.Marshal makes two).
func TestEncodeResultWritesByHand(t *testing.T) {
	r := Result{Output: json.RawMessage(`{"change":"x"}`), Action: "implemented", Reasoning: "done"}
	require.InDelta(t, 1, testing.AllocsPerRun(100, func() { _, _ = EncodeResult(r) }), 0)
}

func FuzzEncodeResult(f *testing.F) {
	f.Add([]byte(`{"a":1}`), "approve", "fine")
	f.Add([]byte(` [1]`), "<", "\u2029")
	f.Fuzz(func(t *testing.T, out []byte, action, reasoning string) {
		requireEncodeIsMarshal(t, Result{Output: out, Action: action, Reasoning: reasoning})
	})
}

func requireEncodeIsMarshal(t *testing.T, r Result) {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, err := EncodeResult(r)
	if wantErr != nil {
		require.Error(t, err, "json.Marshal refuses %+v", r)
		return
	}
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

func BenchmarkEncodeResult(b *testing.B) {
	r := Result{Output: json.RawMessage(`{"change":"the sim's change for the scope","files":["a.go","b.go"]}`), Action: "implemented", Reasoning: "the sim implements the plan"}
	b.Run("hand", func(b *testing.B) {
		for b.Loop() {
			_, _ = EncodeResult(r)
		}
	})
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(r)
		}
	})
}
