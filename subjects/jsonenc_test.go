package subjects

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestAppendRawJSON(t *testing.T) {
	for _, raw := range []json.RawMessage{
		nil, {}, json.RawMessage(`{"a":1}`), json.RawMessage(`{ "a": 1 }`), json.RawMessage(`"<b>"`),
		json.RawMessage(`"\u003cb\u003e"`), json.RawMessage(`[1,2`), json.RawMessage(`1 2`), json.RawMessage(`null`),
	} {
		requireAppendRawIsMarshal(t, raw)
	}
}

// The fast path is taken for what Drover's encoders write: raw JSON already
// in json.Marshal's form is copied, not handed back.
func TestAppendRawJSONTakesCanonicalJSON(t *testing.T) {
	for _, raw := range []string{`{"a":1}`, `null`, `"\u003cb\u003e"`, `[1,"x",{"k":[true]}]`} {
		got, ok := AppendRawJSON(nil, []byte(raw))
		require.True(t, ok, raw)
		require.Equal(t, raw, string(got))
	}
	got, ok := AppendRawJSON(nil, nil)
	require.True(t, ok)
	require.Equal(t, "null", string(got))
}

func FuzzAppendRawJSON(f *testing.F) {
	for _, s := range []string{`{"a":[1,2,{"b":"c"}]}`, ` 1`, `"\u2028"`, `{"a":1,"a":2}`, `tru`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) { requireAppendRawIsMarshal(t, raw) })
}

// requireAppendRawIsMarshal: what AppendRawJSON writes, json.Marshal
// writes; where it declines, the caller's json.Marshal decides.
func requireAppendRawIsMarshal(t *testing.T, raw json.RawMessage) {
	t.Helper()
	got, ok := AppendRawJSON([]byte("x"), raw)
	if !ok {
		require.Equal(t, "x", string(got), "nothing appended when it declines")
		return
	}
	want, err := json.Marshal(raw)
	require.NoError(t, err, "AppendRawJSON took %q, which json.Marshal refuses", raw)
	require.Equal(t, "x"+string(want), string(got))
}
