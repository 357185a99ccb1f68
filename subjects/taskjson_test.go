package subjects

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEncodeTaskIsJSONMarshal(t *testing.T) {
	require.Equal(t, 9, reflect.TypeFor[TaskRequest]().NumField(),
		"EncodeTask writes TaskRequest's nine fields: teach it the new one, then this number")
	for _, r := range []TaskRequest{
		{},
		{ID: "T1", Workflow: "wf", Scope: "add a flag"},
		{ID: "T1", Workflow: "wf", Scope: "<b> & \u2028 \xff", Verification: "go test ./...", Type: "bug", MaxAttempts: 3,
			Branch: "drover/T1", Review: "after_judge"},
		{ID: "T2", Workflow: "wf", Scope: "s", MaxAttempts: -1},
		{ID: "T3", Workflow: "wf", Scope: "s", Metadata: map[string]json.RawMessage{
			"z": json.RawMessage(`1`), "a": json.RawMessage(`{"k":"v"}`), "<m>": json.RawMessage(`"x"`), "n": nil}},
		{ID: "T4", Workflow: "wf", Scope: "s", Metadata: map[string]json.RawMessage{"spaced": json.RawMessage(`{ "k": 1 }`)}},
		{ID: "T5", Workflow: "wf", Scope: "s", Metadata: map[string]json.RawMessage{"html": json.RawMessage(`"<b>"`)}},
		{ID: "T6", Workflow: "wf", Scope: "s", Metadata: map[string]json.RawMessage{"bad": json.RawMessage(`[1,`)}},
		{ID: "T7", Workflow: "wf", Scope: "s", Metadata: map[string]json.RawMessage{"empty": {}}},
		{ID: "T8", Workflow: "wf", Scope: "s", Metadata: map[string]json.RawMessage{}},
	} {
		requireEncodeTaskIsMarshal(t, r)
	}
}

// A request is written by hand: one allocation, its buffer (json.Marshal
// makes more).
func TestEncodeTaskWritesByHand(t *testing.T) {
	r := TaskRequest{ID: "T1", Workflow: "wf", Scope: "add a flag", Verification: "go test ./...", Type: "feature"}
	require.InDelta(t, 1, testing.AllocsPerRun(100, func() { _, _ = EncodeTask(&r) }), 0)
}

func FuzzEncodeTask(f *testing.F) {
	f.Add("T1", "wf", "scope", "verify", "bug", 2, "drover/T1", "off", "k", []byte(`{"a":1}`))
	f.Add("<", "\u2029", "\xff", "", "", 0, "", "", "", []byte(` [1]`))
	f.Fuzz(func(t *testing.T, id, wf, scope, verification, typ string, attempts int, branch, review, key string, value []byte) {
		r := TaskRequest{ID: id, Workflow: wf, Scope: scope, Verification: verification, Type: typ, MaxAttempts: attempts,
			Branch: branch, Review: review}
		requireEncodeTaskIsMarshal(t, r)
		r.Metadata = map[string]json.RawMessage{key: value, key + "2": json.RawMessage(`true`)}
		requireEncodeTaskIsMarshal(t, r)
	})
}

func requireEncodeTaskIsMarshal(t *testing.T, r TaskRequest) {
	t.Helper()
	want, wantErr := json.Marshal(r)
	got, err := EncodeTask(&r)
	if wantErr != nil {
		require.Error(t, err, "json.Marshal refuses %+v", r)
		return
	}
	require.NoError(t, err)
	require.Equal(t, string(want), string(got))
}

func BenchmarkEncodeTask(b *testing.B) {
	r := TaskRequest{ID: "T17", Workflow: "wf-bench", Scope: "add a --dry-run flag to the deploy command", Verification: "go test ./...", Type: "feature"}
	b.Run("hand", func(b *testing.B) {
		for b.Loop() {
			_, _ = EncodeTask(&r)
		}
	})
	b.Run("json", func(b *testing.B) {
		for b.Loop() {
			_, _ = json.Marshal(r)
		}
	})
}
