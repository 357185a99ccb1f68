package pipeline

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// feed is a live feed whose lines stay in its channel (no publisher), on
// a clock that stands still: its bucket refills only when a test moves
// its last refill back.
func feed(buffer int, tokens float64) (*Pipeline, *liveFeed) {
	at := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	p := &Pipeline{cfg: Config{Now: func() time.Time { return at }}}
	return p, &liveFeed{p: p, ch: make(chan subjects.LiveLine, buffer), tokens: tokens, last: at}
}

// TestLiveFeedBounds: a burst past the rate's bucket, a full buffer and
// the per-run cap drop lines without blocking, counted in the pipeline
// and in the next published line; text is escaped and bounded; a runner
// that talks after its role returned is ignored.
func TestLiveFeedBounds(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name              string
		buffer, emits     int
		tokens            float64
		seq               uint64
		dropped, lastDrop uint64
	}{
		{"within bounds", 10, 5, liveBurst, 5, 0, 0},
		{"burst over the bucket", 1000, liveBurst + 50, liveBurst, liveBurst, 50, 0},
		{"buffer full", 3, 10, liveBurst, 3, 7, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, f := feed(tc.buffer, tc.tokens)
			for i := 0; i < tc.emits; i++ {
				f.emit(runner.Activity{Kind: subjects.LiveStdout, Text: "line"})
			}
			require.Equal(t, tc.seq, f.seq)
			require.Equal(t, tc.dropped, p.LiveDropped())
			f.close()
			f.close()
			f.emit(runner.Activity{Kind: subjects.LiveStdout, Text: "late"}) // no panic, ignored
			var n int
			for l := range f.ch {
				n++
				require.Equal(t, uint64(n), l.Seq)
			}
			require.Equal(t, int(tc.seq), n)
		})
	}

	p, f := feed(10, 1)
	f.emit(runner.Activity{Kind: subjects.LiveStdout, Text: "a"})
	f.emit(runner.Activity{Kind: subjects.LiveStdout, Text: "dropped: no token"})
	f.tokens = liveBurst
	f.emit(runner.Activity{Kind: subjects.LiveToolCall, Tool: "Bash\x1b", Text: "\x1b[2J" + strings.Repeat("x", 2*subjects.MaxLiveText)})
	f.close()
	natstest.Recv(t, f.ch, 30*time.Second)
	l := natstest.Recv(t, f.ch, 30*time.Second)
	require.Equal(t, uint64(1), p.LiveDropped())
	require.Equal(t, uint64(1), l.Dropped, "the next line says how many were dropped before it")
	require.Equal(t, `Bash\x1b`, l.Tool)
	require.True(t, strings.HasPrefix(l.Text, `\x1b[2J`))
	require.LessOrEqual(t, len(l.Text), subjects.MaxLiveText)

	p, f = feed(liveMaxLines+10, liveMaxLines+10)
	for i := 0; i < liveMaxLines+10; i++ {
		f.last = f.last.Add(-time.Second) // a second passed: the bucket refills
		f.emit(runner.Activity{Kind: subjects.LiveStdout, Text: "x"})
	}
	require.Equal(t, uint64(liveMaxLines), f.seq, "a run publishes at most liveMaxLines")
	require.Equal(t, uint64(10), p.LiveDropped())
}
