package pipeline

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

// TestBoundError: error text bound for events and the Drover-Error header
// is cut to 4 KiB at a rune boundary, never inside a UTF-8 sequence (an
// event body must stay valid JSON text and a header valid UTF-8).
func TestBoundError(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		in   string
		cut  bool
	}{
		{"short", "role failed", false},
		{"exactly the limit", strings.Repeat("a", 4<<10), false},
		{"ascii", strings.Repeat("a", 5000), true},
		{"cut would split a rune", "ab" + strings.Repeat("€", 2000), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := boundError(tc.in)
			assert.True(t, utf8.ValidString(got), "valid UTF-8")
			assert.LessOrEqual(t, len(got), 4<<10+len("...(truncated)"))
			assert.Equal(t, tc.cut, strings.HasSuffix(got, "...(truncated)"))
		})
	}
}
