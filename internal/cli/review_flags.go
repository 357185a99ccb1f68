package cli

import (
	"fmt"

	"github.com/spf13/pflag"

	"github.com/droverhq/drover/internal/config"
	"github.com/droverhq/drover/subjects"
)

// addReviewFlags registers serve's --review and --review-expire-after
// (DROVER_REVIEW, DROVER_REVIEW_EXPIRE_AFTER); per-queue modes are in the
// file only (review.queues).
func addReviewFlags(fl *pflag.FlagSet, c *config.Review) {
	fl.StringVar(&c.Mode, "review", subjects.ReviewOff, "review gate of every queue: off, after_judge (a person reviews what the judge approved) or instead (a person is the judge)")
	fl.DurationVar(&c.ExpireAfter, "review-expire-after", 0, "fail a review not decided in time with review_expired (0: never)")
}

// mergeReview applies the file's review: block under the flags.
func mergeReview(fs *pflag.FlagSet, dst *config.Review, file config.Review) {
	override(fs, "review", &dst.Mode, file.Mode)
	override(fs, "review-expire-after", &dst.ExpireAfter, file.ExpireAfter)
	dst.Queues = file.Queues
}

// checkReview checks serve's review settings.
func checkReview(c config.Review) error {
	if c.Mode != "" && !subjects.ValidReviewMode(c.Mode) {
		return fmt.Errorf("--review %q: want off, after_judge or instead", c.Mode)
	}
	if c.ExpireAfter < 0 {
		return fmt.Errorf("--review-expire-after %s: must not be negative", c.ExpireAfter)
	}
	return nil
}
