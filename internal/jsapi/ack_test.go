package jsapi

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseAck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		want Ack
		ok   bool
	}{
		{"stored", `{"stream":"DROVER_AUDIT","seq":42}`, Ack{Seq: 42}, true},
		{"first", `{"stream":"KV_drover_state","seq":1}`, Ack{Seq: 1}, true},
		{"sequence zero", `{"stream":"S","seq":0}`, Ack{}, true},
		{"largest sequence", `{"stream":"S","seq":18446744073709551615}`, Ack{Seq: 1<<64 - 1}, true},
		{"duplicate as the server writes it", `{"stream":"S","seq":7,"duplicate": true}`, Ack{Seq: 7, Duplicate: true}, true},
		{"duplicate without the space", `{"stream":"S","seq":7,"duplicate":true}`, Ack{Seq: 7, Duplicate: true}, true},
		{"with a domain", `{"stream":"S","domain":"hub","seq":9}`, Ack{Seq: 9}, true},
		{"with a domain, duplicate", `{"stream":"S","domain":"hub","seq":9,"duplicate": true}`, Ack{Seq: 9, Duplicate: true}, true},

		// Everything else is left to the library's decoding.
		{"a refusal", `{"error":{"code":400,"err_code":10071,"description":"wrong last sequence: 3"},"stream":"S","seq":0}`, Ack{}, false},
		{"empty", ``, Ack{}, false},
		{"not an object", `[]`, Ack{}, false},
		{"no stream", `{"stream":"","seq":1}`, Ack{}, false},
		{"an escaped name", `{"stream":"S\"T","seq":1}`, Ack{}, false},
		{"a control character in the name", "{\"stream\":\"S\x01\",\"seq\":1}", Ack{}, false},
		{"no sequence", `{"stream":"S"}`, Ack{}, false},
		{"an empty sequence", `{"stream":"S","seq":}`, Ack{}, false},
		{"a negative sequence", `{"stream":"S","seq":-1}`, Ack{}, false},
		{"a leading zero", `{"stream":"S","seq":01}`, Ack{}, false},
		{"past uint64", `{"stream":"S","seq":18446744073709551616}`, Ack{}, false},
		{"a counter's value", `{"stream":"S","seq":3,"val":"12"}`, Ack{}, false},
		{"a batch", `{"stream":"S","seq":3,"duplicate": true,"batch":"b","count":2}`, Ack{}, false},
		{"duplicate false", `{"stream":"S","seq":3,"duplicate":false}`, Ack{}, false},
		{"trailing bytes", `{"stream":"S","seq":3} `, Ack{}, false},
		{"unterminated", `{"stream":"S","seq":3`, Ack{}, false},
		{"an unterminated name", `{"stream":"S`, Ack{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, ok := parseAck([]byte(tc.in))
			require.Equal(t, tc.ok, ok)
			assert.Equal(t, tc.want, got)
		})
	}
}

// FuzzParseAck checks parseAck against encoding/json: whatever it reads,
// the library's decoding reads the same, as a stored message.
func FuzzParseAck(f *testing.F) {
	for _, s := range []string{
		`{"stream":"S","seq":42}`, `{"stream":"S","seq":7,"duplicate": true}`,
		`{"stream":"S","domain":"d","seq":9}`, `{"error":{"code":503},"stream":"S","seq":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		got, ok := parseAck(b)
		if !ok {
			return
		}
		want, err := decodeAck(b)
		require.NoError(t, err, "%q", b)
		require.Equal(t, want, got, "%q", b)
		var fields map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(b, &fields))
		require.NotContains(t, fields, "error")
	})
}

func TestDecodeAck(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		body string
		want Ack
		err  string // "" for none
	}{
		{body: `{"stream":"S","seq":5,"val":"3"}`, want: Ack{Seq: 5}},
		{body: `{"type":"io.nats.jetstream.api.v1.pub_ack","stream":"S","seq":6,"duplicate":true,"domain":"d"}`, want: Ack{Seq: 6, Duplicate: true}},
		{body: `{"stream":"","seq":5}`, err: "invalid jetstream publish response"},
		{body: `{}`, err: "invalid jetstream publish response"},
		{body: `not json`, err: "invalid jetstream publish response"},
		// Fields the library decodes, of the wrong type, fail as they fail its decode.
		{body: `{"stream":"S","seq":1,"domain":5}`, err: "invalid jetstream publish response"},
		{body: `{"stream":"S","seq":1,"val":5}`, err: "invalid jetstream publish response"},
		{body: `{"type":5,"stream":"S","seq":1}`, err: "invalid jetstream publish response"},
		{body: `{"stream":"S","seq":"1"}`, err: "invalid jetstream publish response"},
		{body: `{"error":{"code":503,"err_code":10039,"description":"jetstream not enabled"}}`, err: "jetstream not enabled"},
	} {
		a, err := decodeAck([]byte(tc.body))
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.body)
			continue
		}
		require.NoError(t, err, tc.body)
		assert.Equal(t, tc.want, a, tc.body)
	}
}
