package redact

import (
	"encoding/base64"
	"encoding/hex"
	"strings"
)

// minEncodedLen is the shortest encoded form matched: a shorter run of
// base64 or hex characters would turn up by chance in ordinary text.
const minEncodedLen = 8

// encodedForms are the hex and base64 forms of s. For base64, in each
// alphabet: s encoded on its own (padded and not), and, for each
// alignment k (the number of bytes before s in its 3-byte group, 0 to 2),
// the characters that depend on s's bytes only. A stream that holds s at
// any offset holds one of these.
func encodedForms(s string) []form {
	b := []byte(s)
	out := []form{
		{text: hex.EncodeToString(b), kind: "hex"},
		{text: strings.ToUpper(hex.EncodeToString(b)), kind: "hex"},
	}
	for _, enc := range []*base64.Encoding{base64.StdEncoding, base64.URLEncoding} {
		out = append(out, form{text: enc.EncodeToString(b), kind: "base64"})
		raw := enc.WithPadding(base64.NoPadding)
		out = append(out, form{text: raw.EncodeToString(b), kind: "base64"})
		for k := range 3 {
			out = append(out, form{text: alignedBase64(raw, b, k), kind: "base64"})
		}
	}
	return out
}

// alignedBase64 is the run of base64 characters (enc without padding)
// that b gives when it follows k bytes of a 3-byte group, whatever bytes
// come before and after it: the characters that mix in a neighbour's bits
// are cut (2 at the start for k 1, 3 for k 2; the last when b does not end
// a group).
func alignedBase64(enc *base64.Encoding, b []byte, k int) string {
	buf := make([]byte, k+len(b))
	copy(buf[k:], b)
	s := enc.EncodeToString(buf)
	if (k+len(b))%3 != 0 {
		s = s[:len(s)-1]
	}
	skip := [3]int{0, 2, 3}[k]
	if skip >= len(s) {
		return ""
	}
	return s[skip:]
}
