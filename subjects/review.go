package subjects

import (
	"encoding/json"
	"time"
)

// The review gate's modes: a task request's review field and the
// configuration's defaults.
const (
	// ReviewOff: no person reviews; the judge's approval delivers.
	ReviewOff = "off"
	// ReviewAfterJudge: a person reviews what the judge approved.
	ReviewAfterJudge = "after_judge"
	// ReviewInstead: a person is the judge; the judge role does not run.
	ReviewInstead = "instead"
)

// ValidReviewMode reports whether m is a review mode.
func ValidReviewMode(m string) bool {
	return m == ReviewOff || m == ReviewAfterJudge || m == ReviewInstead
}

// StateAwaitingReview is the state of a task parked for a person's review.
const StateAwaitingReview = "awaiting_review"

// StageReview is the stage of a task awaiting review.
const StageReview = "review"

// The review gate's audit events.
const (
	// EventReviewRequested (actor system): the task parked for review.
	EventReviewRequested EventType = "review_requested"
	// EventReviewDecided (actor human): a person approved or rejected it;
	// action approve or reject, metadata reviewer and comment.
	EventReviewDecided EventType = "review_decided"
)

// ReasonReviewExpired: a review was not decided within review.expire_after.
const ReasonReviewExpired Reason = "review_expired"

// The decisions of a review control request.
const (
	ReviewApprove = "approve"
	ReviewReject  = "reject"
)

// MaxReviewCommentBytes bounds a review decision's comment.
const MaxReviewCommentBytes = 16 << 10

// ReviewDecisionRequest is the body of a review control request on
// <prefix>.ctl.review.<wf token>.<task token>.
type ReviewDecisionRequest struct {
	Decision string `json:"decision"` // approve or reject
	Comment  string `json:"comment,omitempty"`
	Reviewer string `json:"reviewer"`
}

// ReviewReply is the answer to a review control request: the task's new
// state and revision, or an error ("already decided" for a second
// decision).
type ReviewReply struct {
	Workflow string `json:"workflow,omitempty"`
	Task     string `json:"task,omitempty"`
	State    string `json:"state,omitempty"`
	Revision uint64 `json:"revision,omitempty"`
	Error    string `json:"error,omitempty"`
}

// TaskReview is a task state's review record: why it waits and since
// when, and once decided, the decision.
type TaskReview struct {
	Mode        string    `json:"mode"`
	RequestedAt time.Time `json:"requested_at"`
	// ExpiresAt is when the review expires (zero: never).
	ExpiresAt time.Time `json:"expires_at,omitzero"`
	// Verdict is the judge's output (after_judge), kept for the reviewer
	// (a blob reference when large).
	Verdict  json.RawMessage `json:"verdict,omitempty"`
	Decision string          `json:"decision,omitempty"`
	Reviewer string          `json:"reviewer,omitempty"`
	Comment  string          `json:"comment,omitempty"`
	Decided  time.Time       `json:"decided_at,omitzero"`
}
