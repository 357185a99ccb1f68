package subjects

import (
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
