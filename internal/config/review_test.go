package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// The review: block parses, and a bad mode, queue or expiry is refused
// with its field named.
func TestReviewBlock(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte("review:\n  mode: after_judge\n  queues: {risky: instead}\n  expire_after: 48h\n"))
	require.NoError(t, err)
	require.Equal(t, Review{Mode: "after_judge", Queues: map[string]string{"risky": "instead"}, ExpireAfter: 48 * time.Hour}, f.Review)
	for _, c := range []struct{ doc, field string }{
		{"review: {mode: later}\n", "review.mode"},
		{"review: {queues: {risky: maybe}}\n", "review.queues.risky"},
		{"review: {queues: {'a b': off}}\n", "review.queues"},
		{"review: {expire_after: -1s}\n", "review.expire_after"},
	} {
		_, err := Parse([]byte(c.doc))
		require.ErrorContains(t, err, c.field, c.doc)
	}
}
