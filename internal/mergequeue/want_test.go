package mergequeue

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// An entry is merged only while its task is parked for it, kept while the
// task is on its attempt and not parked yet, and dropped once the task
// moved on.
func TestWantByTaskState(t *testing.T) {
	e := Entry{Workflow: "wf", Task: "t", Attempt: 2}
	cases := []struct {
		name    string
		state   string
		attempt int
		want    Want
	}{
		{"parked for this attempt", StateAwaitingMerge, 2, WantMerge},
		{"running this attempt, before the park is written", subjects.StateRunning, 2, WantLater},
		{"paused before its delivery", subjects.StatePaused, 2, WantLater},
		{"awaiting review before delivery", "awaiting_review", 2, WantLater},
		{"parked for a newer attempt", StateAwaitingMerge, 3, WantDrop},
		{"running a newer attempt", subjects.StateRunning, 3, WantDrop},
		{"completed", subjects.StateCompleted, 2, WantDrop},
		{"failed", subjects.StateFailed, 2, WantDrop},
		{"cancelled", subjects.StateCancelled, 2, WantDrop},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			require.Equal(t, c.want, want(subjects.TaskState{State: c.state, Attempt: c.attempt}, e))
		})
	}
}
