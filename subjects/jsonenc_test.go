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
