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
				require.Nil(t, r.Spread)
				return
			}
			require.NotNil(t, r.Spread)
			require.Equal(t, len(tc.rounds), r.Spread.Rounds)
			if len(tc.rounds)%2 == 1 {
				require.InDelta(t, pct(want.Drover, want.OpsOverlapped)/100, r.Spread.DroverOfOpsOverlapped.Median, 1e-9,
					"an odd count's median ratio is the median round's")
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
			writeRounds(&text, r.Rounds, r.Spread)
			require.Contains(t, text.String(), "rounds (the tables above are the median round's")
			require.Contains(t, text.String(), "drover / contract-ops (overlapped): ")
			require.Contains(t, text.String(), "drover / minimal worker: ")
			require.Contains(t, text.String(), ", median ")
			require.Contains(t, text.String(), "confidence intervals of the medians")
		})
	}
}

func TestMedian(t *testing.T) {
	require.InDelta(t, 2.0, median([]float64{1, 2, 9}), 1e-9)
	require.InDelta(t, 2.5, median([]float64{1, 2, 3, 9}), 1e-9)
	require.InDelta(t, 7.0, median([]float64{7}), 1e-9)
}

// The interval of a median is the pair of order statistics the sign test
// gives: the widest confidence at or above 95% that n rounds can give, or
// their range with its own confidence when they cannot reach 95%.
func TestMedianRank(t *testing.T) {
	for _, tc := range []struct {
		n    int
		k    int
		conf float64
	}{
		{2, 1, 0.5},
		{5, 1, 1 - 2.0/32},             // the range: 93.75%, short of 95%
		{6, 1, 1 - 2.0/64},             // 96.9%
		{9, 2, 1 - 2*10.0/512},         // 96.1%; the 3rd would give 82%
		{11, 2, 1 - 2*12.0/2048},       // 98.8%; the 3rd would give 93.5%
		{21, 6, 1 - 2*27896.0/(1<<21)}, // 97.3%; the 7th would give 92.2%
	} {
		k, conf := medianRank(tc.n, ciLevel)
		require.Equal(t, tc.k, k, "n %d", tc.n)
		require.InDelta(t, tc.conf, conf, 1e-12, "n %d", tc.n)
	}
}

func TestNewSpread(t *testing.T) {
	sp := newSpread([]float64{0.90, 0.80, 0.86, 0.84, 0.88, 0.81, 0.83, 0.85, 0.87, 0.82, 0.89})
	require.InDelta(t, 0.80, sp.Min, 1e-12)
	require.InDelta(t, 0.90, sp.Max, 1e-12)
	require.InDelta(t, 0.85, sp.Median, 1e-12)
	require.InDelta(t, 0.81, sp.Lo, 1e-12, "the 2nd smallest of 11")
	require.InDelta(t, 0.89, sp.Hi, 1e-12, "the 2nd largest of 11")
	require.InDelta(t, 1-2*12.0/2048, sp.Confidence, 1e-12)

	same := newSpread([]float64{0.9, 0.9, 0.9})
	require.Equal(t, Spread{Min: 0.9, Max: 0.9, Median: 0.9, Lo: 0.9, Hi: 0.9, Confidence: 0.75}, same)
}
