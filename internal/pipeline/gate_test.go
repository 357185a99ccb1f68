package pipeline

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// stepWorkflows answers Workflow from a list of answers, one per call, and
// records whether each call's ctx was done and its deadline.
type stepWorkflows struct {
	answers []error // nil: the state is current
	done    []bool
	waits   []time.Duration
}

var errDown = errors.New("watch down")

func (s *stepWorkflows) Workflow(ctx context.Context, id string) (subjects.WorkflowState, bool, error) {
	n := len(s.done)
	s.done = append(s.done, ctx.Err() != nil)
	var wait time.Duration
	if d, ok := ctx.Deadline(); ok {
		wait = time.Until(d)
	}
	s.waits = append(s.waits, wait)
	if err := s.answers[n]; err != nil {
		return subjects.WorkflowState{}, false, err
	}
	return subjects.WorkflowState{State: subjects.StatePaused}, true, nil
}

// TestWorkflowAsksWithoutWaitingFirst: the gate's read waits (with a
// bound) only when the states are not current.
func TestWorkflowAsksWithoutWaitingFirst(t *testing.T) {
	for _, tc := range []struct {
		name    string
		answers []error
		err     error
		calls   int
	}{
		{"current: one call, no wait", []error{nil}, nil, 1},
		{"down, back while waiting", []error{errDown, nil}, nil, 2},
		{"down for the whole wait", []error{errDown, errDown}, errDown, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			wf := &stepWorkflows{answers: tc.answers}
			p := &Pipeline{d: Deps{Workflows: wf}}
			ws, ok, err := p.workflow(context.Background(), "wf")
			require.ErrorIs(t, err, tc.err)
			if tc.err == nil {
				assert.True(t, ok)
				assert.Equal(t, subjects.StatePaused, ws.State)
			}
			require.Len(t, wf.done, tc.calls)
			assert.True(t, wf.done[0], "the first call does not wait")
			if tc.calls > 1 {
				assert.False(t, wf.done[1], "the second call waits")
				assert.Greater(t, wf.waits[1], gateWait-time.Second, "for gateWait")
				assert.LessOrEqual(t, wf.waits[1], gateWait)
			}
		})
	}
}
