package config

import (
	"time"

	"github.com/droverhq/drover/subjects"
)

// Review is the review gate's part of the file.
type Review struct {
	// Mode is every queue's default: off (the default), after_judge (a
	// person reviews what the judge approved) or instead (a person is the
	// judge). A request's review field wins.
	Mode string `yaml:"mode"`
	// Queues sets the mode of single queues, over Mode.
	Queues map[string]string `yaml:"queues"`
	// ExpireAfter fails a review not decided in time with review_expired
	// (0: never).
	ExpireAfter time.Duration `yaml:"expire_after"`
}

func (r Review) validate(v *validator) {
	if r.Mode != "" && !subjects.ValidReviewMode(r.Mode) {
		v.add("review.mode", "%q: want off, after_judge or instead", r.Mode)
	}
	for q, m := range r.Queues {
		if err := subjects.ValidateQueue(q); err != nil {
			v.add("review.queues", "%q: %v", q, err)
		}
		if !subjects.ValidReviewMode(m) {
			v.add("review.queues."+q, "%q: want off, after_judge or instead", m)
		}
	}
	if r.ExpireAfter < 0 {
		v.add("review.expire_after", "%s must not be negative", r.ExpireAfter)
	}
}
