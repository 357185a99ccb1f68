package pipeline

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"

	"github.com/droverhq/drover/subjects"
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

// A commit's calls share one deadline, with time for every call it makes:
// the state write, each event (the deferred ones and, on the write that
// creates the state, task_accepted, added by the write), and the settling
// of its cache writes.
func TestCommitCalls(t *testing.T) {
	t.Parallel()
	deferred := []subjects.OutboxItem{{}}
	for _, tc := range []struct {
		name  string
		run   taskRun
		items int
		want  int
	}{
		{"an update with three events", taskRun{rev: 4}, 3, 1 + 3 + 2},
		{"the first write, its role's event", taskRun{}, 1, 1 + 1 + 1 + 2},
		{"a fully cached task's one write", taskRun{deferred: deferred}, 3, 1 + 1 + 1 + 3 + 2},
		{"no events", taskRun{rev: 9}, 0, 1 + 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, tc.run.commitCalls(tc.items))
		})
	}
	assert.Equal(t, putSettleTimeout, 2*callTimeout, "the settling's share is two calls' time")
}
