package review

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// TestValidate: a decision is approve or reject by a named reviewer, with
// bounded printable text; a rejection needs a comment (the feedback).
func TestValidate(t *testing.T) {
	ok := subjects.ReviewDecisionRequest{Decision: subjects.ReviewApprove, Reviewer: "alice@host"}
	with := func(f func(*subjects.ReviewDecisionRequest)) subjects.ReviewDecisionRequest {
		r := ok
		f(&r)
		return r
	}
	for _, c := range []struct {
		name  string
		req   subjects.ReviewDecisionRequest
		valid bool
	}{
		{"approve", ok, true},
		{"approve with a comment", with(func(r *subjects.ReviewDecisionRequest) { r.Comment = "fine\n\tthanks" }), true},
		{"reject with a comment", with(func(r *subjects.ReviewDecisionRequest) { r.Decision, r.Comment = subjects.ReviewReject, "needs tests" }), true},
		{"reject without a comment", with(func(r *subjects.ReviewDecisionRequest) { r.Decision = subjects.ReviewReject }), false},
		{"unknown decision", with(func(r *subjects.ReviewDecisionRequest) { r.Decision = "maybe" }), false},
		{"no reviewer", with(func(r *subjects.ReviewDecisionRequest) { r.Reviewer = " " }), false},
		{"reviewer too long", with(func(r *subjects.ReviewDecisionRequest) { r.Reviewer = strings.Repeat("a", MaxReviewerBytes+1) }), false},
		{"reviewer with a control character", with(func(r *subjects.ReviewDecisionRequest) { r.Reviewer = "a\x1b[2Jb" }), false},
		{"comment with an escape", with(func(r *subjects.ReviewDecisionRequest) { r.Comment = "\x1b]0;owned\x07" }), false},
		{"comment too long", with(func(r *subjects.ReviewDecisionRequest) {
			r.Comment = strings.Repeat("a", subjects.MaxReviewCommentBytes+1)
		}), false},
		{"comment not UTF-8", with(func(r *subjects.ReviewDecisionRequest) { r.Comment = "\xff" }), false},
	} {
		err := Validate(c.req)
		if c.valid {
			assert.NoError(t, err, c.name)
		} else {
			assert.ErrorIs(t, err, ErrInvalid, "%s: %v", c.name, err)
		}
	}
}

// TestSweepEvery: a tenth of the expiry, within 100ms and 30s.
func TestSweepEvery(t *testing.T) {
	for expire, want := range map[string]string{"1ms": "100ms", "2s": "200ms", "1m": "6s", "1h": "30s"} {
		d, _ := time.ParseDuration(expire)
		w, _ := time.ParseDuration(want)
		assert.Equal(t, w, sweepEvery(d), expire)
	}
}

// TestSameReview: a decision is tried again only on the review it was
// meant for, still undecided.
func TestSameReview(t *testing.T) {
	at := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	task := func(st string, attempt int, requested time.Time, decision string) state.Task {
		return state.Task{TaskState: subjects.TaskState{State: st, Attempt: attempt,
			Review: &subjects.TaskReview{RequestedAt: requested, Decision: decision}}}
	}
	cur := task(subjects.StateAwaitingReview, 1, at, "")
	for _, c := range []struct {
		name  string
		fresh state.Task
		want  bool
	}{
		{"the same review, taken over", task(subjects.StateAwaitingReview, 1, at, ""), true},
		{"decided", task(subjects.StatePaused, 1, at, subjects.ReviewApprove), false},
		{"a later review", task(subjects.StateAwaitingReview, 2, at.Add(time.Minute), ""), false},
		{"failed", task(subjects.StateFailed, 1, at, ""), false},
	} {
		assert.Equal(t, c.want, sameReview(cur, c.fresh), c.name)
	}
}
