package redact

import (
	"encoding/base64"
	"encoding/hex"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const tok = "ghp_Tok3nOfTheForge/+x?=&9"

var encodings = map[string]*base64.Encoding{
	"std": base64.StdEncoding, "url": base64.URLEncoding,
	"raw std": base64.RawStdEncoding, "raw url": base64.RawURLEncoding,
}

// Every encoding of a secret is masked: hex in both cases, percent
// encoding, and base64 in each alphabet, padded or not, on its own or in
// the middle of a longer stream at every alignment.
func TestRedactorEncodedForms(t *testing.T) {
	t.Parallel()
	r := NewNamed(Secret{Name: "GITHUB_TOKEN", Value: tok})
	b := []byte(tok)
	cases := []struct{ name, in, form string }{
		{"hex", "x " + hex.EncodeToString(b) + " y", "hex"},
		{"HEX", "x " + strings.ToUpper(hex.EncodeToString(b)) + " y", "hex"},
		{"query escaped", "?t=" + url.QueryEscape(tok), "url"},
		{"path escaped", "/" + url.PathEscape(tok), "url"},
		{"plain", "say " + tok, "plain"},
	}
	for name, enc := range encodings {
		cases = append(cases, struct{ name, in, form string }{"base64 " + name, "Basic " + enc.EncodeToString(b), "base64"})
		for pre := range 6 {
			for post := range 4 {
				in := enc.EncodeToString([]byte(strings.Repeat("P", pre) + tok + strings.Repeat("s", post)))
				cases = append(cases, struct{ name, in, form string }{
					"base64 " + name + " in a stream", in, "base64"})
			}
		}
	}
	for _, tc := range cases {
		require.True(t, r.Contains(tc.in), "%s: %s", tc.name, tc.in)
		f, ok := r.Find(tc.in)
		require.True(t, ok, tc.name)
		require.Equal(t, Found{Name: "GITHUB_TOKEN", Form: tc.form}, f, tc.name)
		out := r.String(tc.in)
		require.Contains(t, out, Mask, tc.name)
		require.False(t, r.Contains(out), "%s: %s left %s", tc.name, tc.in, out)
	}
}

// What is not a secret's encoding stays as it is: other base64, a prefix
// of the secret's, and forms too short to tell from chance.
func TestRedactorEncodedLeavesOthers(t *testing.T) {
	t.Parallel()
	r := New(tok, "abcd")
	for _, in := range []string{
		base64.StdEncoding.EncodeToString([]byte("an ordinary value")),
		base64.StdEncoding.EncodeToString([]byte(tok))[:12],
		hex.EncodeToString([]byte(tok))[:20],
		"YWJj", // "abc": four characters, under the encoded forms' minimum
		"plain text with abc in it",
	} {
		require.False(t, r.Contains(in), in)
		require.Equal(t, in, r.String(in))
	}
	f, ok := r.Find("x abcd")
	require.True(t, ok)
	require.Equal(t, "secret #2", f.Name)
}

// The aligned forms are exactly the characters a secret's bytes decide.
func TestAlignedBase64(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		k    int
		want string
	}{
		{"abcdef", 0, "YWJjZGVm"},   // two whole groups
		{"abcdefg", 0, "YWJjZGVmZ"}, // the last char (w) mixes in the next byte
		{"abcdef", 1, "FiY2RlZ"},    // "\x00abcdef" is AGFiY2RlZg
		{"abcdef", 2, "hYmNkZW"},    // "\x00\x00abcdef" is AABhYmNkZWY: Y mixes in the next byte
		{"ab", 2, "hY"},             // "\x00\x00ab" is AABhYg
	} {
		require.Equal(t, tc.want, alignedBase64(base64.RawStdEncoding, []byte(tc.in), tc.k), "%q at %d", tc.in, tc.k)
	}
}

// FuzzRedactorBase64: a secret inside any byte stream is found in the
// stream's base64 and hex, and nothing of it is left after masking.
func FuzzRedactorBase64(f *testing.F) {
	f.Add("sk-proj-0123456789", []byte("Authorization: Bearer "), []byte("\n"))
	f.Add("p\x00ss\xffword", []byte{1}, []byte{})
	f.Fuzz(func(t *testing.T, secret string, pre, post []byte) {
		if len(strings.TrimSpace(secret)) < 8 || strings.TrimSpace(secret) != secret {
			return
		}
		r := New(secret)
		stream := append(append(append([]byte{}, pre...), secret...), post...)
		for _, enc := range encodings {
			s := enc.EncodeToString(stream)
			if !r.Contains(s) {
				t.Fatalf("%q not found in %s", secret, s)
			}
			if r.Contains(r.String(s)) {
				t.Fatalf("%q left in %s", secret, r.String(s))
			}
		}
		if !r.Contains(hex.EncodeToString(stream)) {
			t.Fatalf("%q not found in hex", secret)
		}
	})
}

func BenchmarkRedactorContains(b *testing.B) {
	r := New("sk-proj-0123456789abcdef", "ghp_0123456789abcdefghij", "hunter2hunter2", "nats-password-0")
	text := strings.Repeat("func main() { fmt.Println(\"an ordinary line of a patch\") }\n", 1<<14) // 1 MiB
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		if r.Contains(text) {
			b.Fatal("found")
		}
	}
}

func BenchmarkRedactorString(b *testing.B) {
	r := New("sk-proj-0123456789abcdef", "ghp_0123456789abcdefghij", "hunter2hunter2", "nats-password-0")
	text := strings.Repeat("func main() { fmt.Println(\"an ordinary line of a patch\") }\n", 1<<14) // 1 MiB
	b.SetBytes(int64(len(text)))
	for b.Loop() {
		_ = r.String(text)
	}
}
