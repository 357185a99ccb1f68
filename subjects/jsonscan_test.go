package subjects

import (
	"encoding/json"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"
)

// strictSeeds are bodies strictJSON vouches for, bodies checkStrict
// refuses, and bodies only checkStrict can decide.
var strictSeeds = []string{
	`{"id":"T1","workflow":"wf","scope":"fix a < b && c > d","metadata":{"a":[1,2.5,-3e2,"<&>",null,true,false]}}`,
	" {\n\t\"id\" : \"T1\" ,\r\n \"scope\" : \"s\" } \n", `{}`, `[]`, `"s"`, `1`, `null`,
	`{"a":1,"a":2}`, `{"a":{"b":1,"b":2}}`, `[{"a":1},{"a":1}]`, `{"a":1,"\u0061":2}`, `{"a\"":1,"a\"":2}`,
	`{"a":1}{}`, `{"a":1} x`, `{"a":1,}`, `[1,]`, `{"a" 1}`, `{"a":01}`, `{"a":1.}`, `{"a":-}`, `{"a":tru}`,
	"{\"a\":\"\x01\"}", `{"a":"\x"}`, `{"a":"\u12g4"}`, `{"a":"unterminated}`, ``, ` `, `{`,
	strings.Repeat("[", DefaultMaxDepth) + strings.Repeat("]", DefaultMaxDepth),
	strings.Repeat("[", DefaultMaxDepth+1) + strings.Repeat("]", DefaultMaxDepth+1),
	strings.Repeat(`{"a":`, DefaultMaxDepth) + `1` + strings.Repeat("}", DefaultMaxDepth),
	strings.Repeat(`{"a":`, DefaultMaxDepth+1) + `1` + strings.Repeat("}", DefaultMaxDepth+1),
}

// TestStrictJSON checks strictJSON against checkStrict on the seeds, and
// that it vouches for the usual bodies, so that they skip checkStrict.
func TestStrictJSON(t *testing.T) {
	for _, body := range strictSeeds {
		t.Run(body, func(t *testing.T) { requireStrictAgrees(t, []byte(body), DefaultMaxDepth) })
	}
	for _, body := range []string{
		`{"id":"T1","workflow":"wf","scope":"fix a < b && c > d","metadata":{"a":[1,2.5,-3e2,"<&>",null,true,false]}}`,
		" {\n\t\"id\" : \"T1\" ,\r\n \"scope\" : \"é\\n\\u00e9\" } \n",
		strings.Repeat("[", DefaultMaxDepth) + strings.Repeat("]", DefaultMaxDepth),
	} {
		require.True(t, strictJSON([]byte(body), DefaultMaxDepth), body)
	}
	for _, body := range []string{`{"a":1,"a":2}`, `{"a":1} x`, strings.Repeat("[", DefaultMaxDepth+1) + strings.Repeat("]", DefaultMaxDepth+1)} {
		require.False(t, strictJSON([]byte(body), DefaultMaxDepth), body)
	}
	many := "{"
	for i := range maxStrictKeys + 1 {
		if i > 0 {
			many += ","
		}
		many += `"k` + strings.Repeat("x", i) + `":1`
	}
	many += "}"
	require.False(t, strictJSON([]byte(many), DefaultMaxDepth), "an object past maxStrictKeys goes to checkStrict")
	require.Nil(t, checkStrict([]byte(many), DefaultMaxDepth))
}

func FuzzStrictJSON(f *testing.F) {
	for _, body := range strictSeeds {
		f.Add([]byte(body), 3)
	}
	f.Fuzz(func(t *testing.T, body []byte, depth int) {
		if !utf8.Valid(body) { // DecodeTask refuses it before
			return
		}
		requireStrictAgrees(t, body, min(max(depth, 1), 40))
	})
}

// requireStrictAgrees checks that strictJSON vouches only for bodies
// checkStrict accepts.
func requireStrictAgrees(t *testing.T, body []byte, depth int) {
	t.Helper()
	if strictJSON(body, depth) {
		require.Nil(t, checkStrict(body, depth), "strictJSON vouched for %q at depth %d", body, depth)
	}
}

var validSeeds = []string{
	`{"summary":"what the role produced","files":["a.go","b.go"],"n":-1.5e3,"ok":true,"none":null}`,
	` [1, 2 ,{"a":{"b":[]}}] `,
	`{"a":1,"a":2}`,
	`{"\u0061":"\ud800\n"}`,
	"\"\xff\"",
	`01`, `1.`, `-`, `.5`, `1e`, `tru`, `nul`, `"\x"`, `{"a" 1}`, `[1,]`, `{,}`, ``, ` `, `{}x`, `"`, "\"\x01\"",
}

// ValidJSON answers as json.Valid does, for any bytes.
func FuzzValidJSON(f *testing.F) {
	for _, s := range validSeeds {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, b []byte) {
		require.Equal(t, json.Valid(b), ValidJSON(b), "%q", b)
	})
}

func TestValidJSON(t *testing.T) {
	t.Parallel()
	for _, s := range validSeeds {
		require.Equal(t, json.Valid([]byte(s)), ValidJSON([]byte(s)), "%q", s)
	}
	// Past the scan's depth, json.Valid decides; a value nested without
	// end is refused without the scan following it.
	deep := strings.Repeat("[", validDepth+10) + strings.Repeat("]", validDepth+10)
	require.True(t, ValidJSON([]byte(deep)))
	require.False(t, ValidJSON([]byte(strings.Repeat("[", 1<<20))))
}

func BenchmarkValidJSON(b *testing.B) {
	out := []byte(`{"summary":"the implementer's account of its change, a sentence or two long","files":["internal/a.go","internal/b.go"],"tests":{"passed":12,"failed":0},"notes":"nothing else to say"}`)
	for _, v := range []struct {
		name  string
		valid func([]byte) bool
	}{{"ValidJSON", ValidJSON}, {"json.Valid", json.Valid}} {
		b.Run(v.name, func(b *testing.B) {
			b.SetBytes(int64(len(out)))
			for b.Loop() {
				if !v.valid(out) {
					b.Fatal("not valid")
				}
			}
		})
	}
}
