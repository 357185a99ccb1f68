package bench

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// The report shows the round whose Drover / overlapped contract-ops ratio
// is the median (the lower middle of an even count), and lists the rounds
// only when there is more than one.
func TestSetRoundsPicksTheMedianRatio(t *testing.T) {
	rd := func(drover, ops float64) benchRound {
		return benchRound{
			Drover:          Phase{TasksPerSec: drover, Completed: int(drover)},
			OpsOverlapped:   Phase{TasksPerSec: ops},
			Minimal:         Phase{TasksPerSec: 0.9 * ops},
			FloorOverlapped: Phase{TasksPerSec: 4 * ops},
			Writes:          Writes{PerTask: drover},
		}
	}
	for _, tc := range []struct {
		name   string
		rounds []benchRound
		median int
	}{
		{"one", []benchRound{rd(70, 100)}, 0},
		{"odd", []benchRound{rd(90, 100), rd(60, 100), rd(70, 100)}, 2},
		{"even: the lower middle", []benchRound{rd(80, 100), rd(60, 100), rd(70, 100), rd(90, 100)}, 2},
		{"by ratio, not by speed", []benchRound{rd(200, 400), rd(100, 100), rd(150, 200)}, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var r Report
			r.setRounds(tc.rounds)
			want := tc.rounds[tc.median]
			require.Equal(t, want.Drover, r.Drover)
			require.Equal(t, want.OpsOverlapped, r.OpsOverlapped)
			require.Equal(t, want.Minimal, r.Minimal, "the minimal worker is the same round's")
			require.Equal(t, want.Writes, r.Writes, "the writes are the same round's")
			if len(tc.rounds) == 1 {
				require.Nil(t, r.Rounds)
				return
			}
			require.Len(t, r.Rounds, len(tc.rounds))
			for i, x := range r.Rounds {
				require.Equal(t, i == tc.median, x.Median, "round %d", i)
				require.InDelta(t, 100*tc.rounds[i].Drover.TasksPerSec/tc.rounds[i].OpsOverlapped.TasksPerSec, x.DroverOfOpsOverlappedPct, 1e-9)
				require.InDelta(t, 25*tc.rounds[i].Drover.TasksPerSec/tc.rounds[i].OpsOverlapped.TasksPerSec, x.RatioOverlappedPct, 1e-9)
				require.InDelta(t, 100*tc.rounds[i].Drover.TasksPerSec/tc.rounds[i].Minimal.TasksPerSec, x.DroverOfMinimalPct, 1e-9)
				require.InDelta(t, 90, x.MinimalOfOpsOverlappedPct, 1e-9)
			}
			var text bytes.Buffer
			writeRounds(&text, r.Rounds)
			require.Contains(t, text.String(), "rounds (the tables above are the median round's")
			require.Contains(t, text.String(), "drover / contract-ops (overlapped): ")
			require.Contains(t, text.String(), "drover / minimal worker: ")
			require.Contains(t, text.String(), ", median ")
		})
	}
}

func TestMedian(t *testing.T) {
	require.InDelta(t, 2.0, median([]float64{1, 2, 9}), 1e-9)
	require.InDelta(t, 2.5, median([]float64{1, 2, 3, 9}), 1e-9)
	require.InDelta(t, 7.0, median([]float64{7}), 1e-9)
}
