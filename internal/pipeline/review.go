package pipeline

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// ReviewPolicy is the review gate's configuration: which tasks a person
// reviews, and for how long a review may wait.
type ReviewPolicy struct {
	// Mode is the default of every queue: subjects.ReviewOff (the
	// default), ReviewAfterJudge or ReviewInstead.
	Mode string
	// Queues overrides Mode per queue. A request's review field may
	// raise the level, never lower it (see ModeFor).
	Queues map[string]string
	// ExpireAfter fails a review not decided in time with review_expired
	// (0: reviews never expire).
	ExpireAfter time.Duration
}

// ModeFor is the review mode of a request on queue (requested: its review
// field, "" for none): the queue's mode, else the default, raised to
// requested when that is a higher level, never lowered (admission
// refuses a request that asks for less; a request admitted before the
// operator raised the mode gets the new floor).
func (r ReviewPolicy) ModeFor(queue, requested string) string {
	floor := subjects.ReviewOff
	if m := r.Queues[queue]; m != "" {
		floor = m
	} else if r.Mode != "" {
		floor = r.Mode
	}
	if requested != "" && reviewRank(requested) > reviewRank(floor) {
		return requested
	}
	return floor
}

func (p *Pipeline) reviewMode(t *taskRun) string {
	return p.cfg.Review.ModeFor(t.d.Queue, t.req.Review)
}

// requestReview parks the task for a person's review: state
// awaiting_review with its recorded change (the workspace's attempts), its
// plan (the planner's output key) and the judge's verdict (nil when a
// person judges instead), and review_requested. No pool slot or worktree
// is held while it waits.
func (p *Pipeline) requestReview(ctx context.Context, t *taskRun, round int, verdict json.RawMessage, items []subjects.OutboxItem, keep func(*subjects.TaskState)) consumers.Outcome {
	mode := p.reviewMode(t)
	now := p.cfg.Now().UTC()
	rec := &subjects.TaskReview{Mode: mode, RequestedAt: now, Verdict: verdict}
	md := map[string]any{"mode": mode}
	if p.cfg.Review.ExpireAfter > 0 {
		rec.ExpiresAt = now.Add(p.cfg.Review.ExpireAfter)
		md["expires_at"] = rec.ExpiresAt
	}
	ev := p.event(t, subjects.EventReviewRequested, subjects.ActorSystem, round, 0)
	ev.Action = "requested"
	ev.Metadata = mustJSON(md)
	items = append(items, item(ev))
	return p.parkFor(ctx, t, subjects.StateAwaitingReview, items, func(s *subjects.TaskState) {
		if keep != nil {
			keep(s)
		}
		s.Stage, s.Review, s.Feedback = subjects.StageReview, rec, ""
	})
}

// review is the person's decision the task was approved with, if any.
func (t *taskRun) review() *ReviewDecision {
	r := t.st.Review
	if r == nil || r.Decision != subjects.ReviewApprove {
		return nil
	}
	return &ReviewDecision{Decision: r.Decision, Reviewer: r.Reviewer, Comment: r.Comment, At: r.Decided}
}

// DecideReview applies a person's decision to a task awaiting review, by
// compare-and-set on the revision of cur: review_decided (actor human,
// metadata reviewer and comment), then approve sends the task on to
// delivery and reject back to its implementer with the comment as
// feedback, exactly like a judge's rejection (a rejected last attempt
// fails with max_attempts). A cur no longer awaiting review returns
// ErrAlreadyDecided when a decision was recorded, else ErrNotParked; a
// task whose state moved since cur (the compare-and-set lost) returns
// ErrAlreadyDecided, which a caller answers by reading the state again.
func (p *Pipeline) DecideReview(ctx context.Context, cur state.Task, d ReviewDecision) (state.Task, error) {
	if cur.State != subjects.StateAwaitingReview {
		if cur.Review != nil && cur.Review.Decision != "" {
			verb := "approved"
			if cur.Review.Decision == subjects.ReviewReject {
				verb = "rejected"
			}
			return state.Task{}, fmt.Errorf("%w: %s/%s was %s by %s", ErrAlreadyDecided, cur.Workflow, cur.Task, verb, cur.Review.Reviewer)
		}
		return state.Task{}, fmt.Errorf("%w: %s/%s is %s, not %s", ErrNotParked, cur.Workflow, cur.Task, cur.State, subjects.StateAwaitingReview)
	}
	if d.Decision != subjects.ReviewApprove && d.Decision != subjects.ReviewReject {
		return state.Task{}, fmt.Errorf("decision %.40q: want %s or %s", d.Decision, subjects.ReviewApprove, subjects.ReviewReject)
	}
	if d.At.IsZero() {
		d.At = p.cfg.Now().UTC()
	}
	note := Note{Type: subjects.EventReviewDecided, Actor: subjects.ActorHuman, Action: d.Decision, Reasoning: d.Comment,
		Metadata: map[string]any{"reviewer": d.Reviewer, "comment": d.Comment}}
	record := func(s *subjects.TaskState) {
		r := *s.Review
		r.Decision, r.Reviewer, r.Comment, r.Decided = d.Decision, d.Reviewer, d.Comment, d.At
		s.Review = &r
	}
	if cur.Review == nil {
		cur.Review = &subjects.TaskReview{}
	}
	t, err := p.parkedRun(cur, subjects.StateAwaitingReview)
	if err != nil {
		return state.Task{}, err
	}
	if d.Decision == subjects.ReviewApprove {
		return p.sendOn(ctx, t, "review", []Note{note}, func(s *subjects.TaskState) {
			record(s)
			s.Stage = StageDeliver
		})
	}
	if t.st.Attempt >= t.req.MaxAttempts {
		p.learn(ctx, t, subjects.RoleJudge, t.st.Attempt, "rejected", fmt.Sprintf("a person rejected attempt %d, the last allowed", t.st.Attempt), d.Comment, subjects.EventReviewDecided)
		return p.failParked(ctx, t, subjects.ReasonMaxAttempts,
			fmt.Sprintf("the reviewer rejected attempt %d, the last allowed; comment: %s", t.st.Attempt, d.Comment),
			p.notes(t, []Note{note}), func(s *subjects.TaskState) { record(s); s.Request = nil })
	}
	return p.sendOn(ctx, t, "review", []Note{note}, func(s *subjects.TaskState) {
		record(s)
		s.Stage, s.Attempt, s.Feedback = string(subjects.RoleImplementer), t.st.Attempt+1, d.Comment
	})
}

// ExpireReview fails a task whose review was not decided in time with
// review_expired (a DLQ entry and task_failed), by compare-and-set on the
// revision of cur: of several workers sweeping at once, one wins. It
// returns false when the review has not expired at now.
func (p *Pipeline) ExpireReview(ctx context.Context, cur state.Task, now time.Time) (bool, error) {
	if cur.State != subjects.StateAwaitingReview || cur.Review == nil || cur.Review.ExpiresAt.IsZero() || now.Before(cur.Review.ExpiresAt) {
		return false, nil
	}
	_, err := p.FailParked(ctx, cur, subjects.StateAwaitingReview, subjects.ReasonReviewExpired,
		fmt.Sprintf("the review requested at %s was not decided by %s", cur.Review.RequestedAt.Format(time.RFC3339), cur.Review.ExpiresAt.Format(time.RFC3339)))
	if err != nil {
		return false, err
	}
	return true, nil
}
