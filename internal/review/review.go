// Package review is the review gate's service side: the decisions people
// send on <prefix>.ctl.review.<wf>.<task> (answered by any worker, in a
// queue group like the workflow controls), the expiry sweep, and the list
// of tasks awaiting review that `drover review` and the console show.
//
// A task awaiting review is only its state in drover_state (state
// awaiting_review): it holds no pool slot and no worktree, and survives
// restarts of every worker. Each decision is a compare-and-set on the
// revision of that state (pipeline.DecideReview), so a second decision on
// the same review is refused, never applied twice.
package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// MaxReviewerBytes bounds a decision's reviewer.
const MaxReviewerBytes = 128

// ErrInvalid is the cause of a decision request that is not well formed.
var ErrInvalid = errors.New("invalid review decision")

// Validate checks a decision request: approve or reject, a reviewer of at
// most MaxReviewerBytes and a comment of at most
// subjects.MaxReviewCommentBytes, printable UTF-8 (a comment may hold new
// lines and tabs).
func Validate(r subjects.ReviewDecisionRequest) error {
	switch {
	case r.Decision != subjects.ReviewApprove && r.Decision != subjects.ReviewReject:
		return fmt.Errorf("%w: decision %.40q: want %q or %q", ErrInvalid, r.Decision, subjects.ReviewApprove, subjects.ReviewReject)
	case strings.TrimSpace(r.Reviewer) == "":
		return fmt.Errorf("%w: reviewer is required", ErrInvalid)
	case len(r.Reviewer) > MaxReviewerBytes || !utf8.ValidString(r.Reviewer) || strings.ContainsFunc(r.Reviewer, unicode.IsControl):
		return fmt.Errorf("%w: reviewer %.40q: want at most %d bytes of printable text", ErrInvalid, r.Reviewer, MaxReviewerBytes)
	case len(r.Comment) > subjects.MaxReviewCommentBytes || !utf8.ValidString(r.Comment) ||
		strings.ContainsFunc(r.Comment, func(c rune) bool { return unicode.IsControl(c) && c != '\n' && c != '\t' && c != '\r' }):
		return fmt.Errorf("%w: comment: want at most %d bytes of printable text", ErrInvalid, subjects.MaxReviewCommentBytes)
	case r.Decision == subjects.ReviewReject && strings.TrimSpace(r.Comment) == "":
		return fmt.Errorf("%w: a rejection needs a comment: it is the implementer's feedback", ErrInvalid)
	}
	return nil
}

// Waiting lists the tasks awaiting review, oldest request first, in one
// pass over drover_state.
func Waiting(ctx context.Context, kv jetstream.KeyValue) ([]state.Task, error) {
	w, err := kv.WatchAll(ctx, jetstream.IgnoreDeletes())
	if err != nil {
		return nil, fmt.Errorf("review: list: %w", err)
	}
	defer func() { _ = w.Stop() }()
	var out []state.Task
	for {
		select {
		case e, ok := <-w.Updates():
			if !ok {
				return nil, errors.New("review: list: the watch closed")
			}
			if e == nil {
				slices.SortFunc(out, func(a, b state.Task) int { return requestedAt(a).Compare(requestedAt(b)) })
				return out, nil
			}
			if strings.HasSuffix(e.Key(), "."+subjects.Reserved) || !strings.Contains(string(e.Value()), subjects.StateAwaitingReview) {
				continue // a workflow key, or not waiting: no need to decode it
			}
			var t state.Task
			if json.Unmarshal(e.Value(), &t.TaskState) != nil || t.State != subjects.StateAwaitingReview {
				continue
			}
			t.Revision = e.Revision()
			out = append(out, t)
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
}

func requestedAt(t state.Task) time.Time {
	if t.Review != nil {
		return t.Review.RequestedAt
	}
	return t.UpdatedAt
}
