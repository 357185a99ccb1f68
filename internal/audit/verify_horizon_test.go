package audit

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
)

// TestDLQHorizon: the time before which the DLQ may no longer hold an entry
// follows its MaxAge and, once it removed entries, its oldest entry left.
func TestDLQHorizon(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	tests := []struct {
		name string
		cfg  jetstream.StreamConfig
		st   jetstream.StreamState
		want time.Time
	}{
		{"no limits, nothing removed", jetstream.StreamConfig{}, jetstream.StreamState{FirstSeq: 1, LastSeq: 5, Msgs: 5}, time.Time{}},
		{"empty, never written", jetstream.StreamConfig{}, jetstream.StreamState{}, time.Time{}},
		{"max age", jetstream.StreamConfig{MaxAge: 30 * day}, jetstream.StreamState{FirstSeq: 1, LastSeq: 5, Msgs: 5},
			now.Add(-30 * day).Add(dlqHorizonSlack)},
		{"entries removed by max msgs", jetstream.StreamConfig{MaxMsgs: 3}, jetstream.StreamState{FirstSeq: 3, LastSeq: 5, Msgs: 3, FirstTime: now.Add(-2 * day)},
			now.Add(-2 * day).Add(dlqHorizonSlack)},
		{"oldest left is newer than max age", jetstream.StreamConfig{MaxAge: 30 * day, MaxMsgs: 3}, jetstream.StreamState{FirstSeq: 3, LastSeq: 5, Msgs: 3, FirstTime: now.Add(-2 * day)},
			now.Add(-2 * day).Add(dlqHorizonSlack)},
		{"max age is newer than oldest left", jetstream.StreamConfig{MaxAge: day}, jetstream.StreamState{FirstSeq: 3, LastSeq: 5, Msgs: 3, FirstTime: now.Add(-2 * day)},
			now.Add(-day).Add(dlqHorizonSlack)},
		{"all removed: up to the last entry", jetstream.StreamConfig{MaxMsgs: 10}, jetstream.StreamState{FirstSeq: 6, LastSeq: 5, Msgs: 0, LastTime: now.Add(-time.Hour)},
			now.Add(-time.Hour).Add(dlqHorizonSlack)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, dlqHorizon(tc.cfg, tc.st, now))
		})
	}
}
