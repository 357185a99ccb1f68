package pipeline

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/droverhq/drover/subjects"
)

// TestReviewPolicyModeFor: a request's review field raises (never lowers) its queue's
// mode, which wins over the default; the zero policy is off.
func TestReviewPolicyModeFor(t *testing.T) {
	policy := ReviewPolicy{Mode: subjects.ReviewAfterJudge, Queues: map[string]string{"risky": subjects.ReviewInstead, "free": subjects.ReviewOff}}
	for _, c := range []struct {
		name       string
		policy     ReviewPolicy
		queue, req string
		want       string
	}{
		{"zero policy", ReviewPolicy{}, "default", "", subjects.ReviewOff},
		{"zero policy, request", ReviewPolicy{}, "default", subjects.ReviewInstead, subjects.ReviewInstead},
		{"default mode", policy, "default", "", subjects.ReviewAfterJudge},
		{"queue mode", policy, "risky", "", subjects.ReviewInstead},
		{"queue off over the default", policy, "free", "", subjects.ReviewOff},
		{"a request cannot lower the queue's mode", policy, "risky", subjects.ReviewOff, subjects.ReviewInstead},
		{"a request cannot lower the default", policy, "default", subjects.ReviewInstead, subjects.ReviewAfterJudge},
		{"a request raises the queue's mode", policy, "free", subjects.ReviewInstead, subjects.ReviewInstead},
		{"a request raises instead to after_judge", policy, "risky", subjects.ReviewAfterJudge, subjects.ReviewAfterJudge},
	} {
		assert.Equal(t, c.want, c.policy.ModeFor(c.queue, c.req), c.name)
	}
}

// TestIsParked: only awaiting_<word> states are finished by an outside
// actor; paused, running and terminal states are not.
func TestIsParked(t *testing.T) {
	for state, want := range map[string]bool{
		subjects.StateAwaitingReview: true, "awaiting_merge": true, "awaiting_pull_request": true,
		subjects.StatePaused: false, subjects.StateRunning: false, subjects.StateCompleted: false,
		"awaiting_": false, "awaiting_Merge": false, "awaiting merge": false, "": false,
	} {
		assert.Equal(t, want, IsParked(state), state)
	}
}
