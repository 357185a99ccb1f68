package consumers

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// TestPanicErrorRuneSafe: a panic value (untrusted text) is cut to 1 KiB at
// a rune boundary, never inside a UTF-8 sequence.
func TestPanicErrorRuneSafe(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		value string
		cut   bool
	}{
		{"short", "boom", false},
		{"ascii", strings.Repeat("a", 2000), true},
		{"cut would split a rune", "a" + strings.Repeat("é", 1000), true},
		{"four-byte runes", "ab" + strings.Repeat("😀", 400), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := (&PanicError{Value: tc.value}).Error()
			assert.True(t, utf8.ValidString(got), "valid UTF-8")
			assert.LessOrEqual(t, len(got), len("panic: ")+1<<10+len("...(truncated)"))
			assert.Equal(t, tc.cut, strings.HasSuffix(got, "...(truncated)"))
		})
	}
}
