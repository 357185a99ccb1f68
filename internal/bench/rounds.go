package bench

import (
	"cmp"
	"fmt"
	"io"
	"slices"
)

// benchRound is one round's Drover, contract-ops and floor phases.
type benchRound struct {
	Drover          Phase
	Writes          Writes
	OpsOverlapped   Phase
	Minimal         Phase
	FloorOverlapped Phase
}

// Round is one round's throughput and Drover's ratios, as the report lists
// them when there is more than one.
type Round struct {
	DroverTasksPerSec          float64 `json:"drover_tasks_per_s"`
	OpsOverlappedTasksPerSec   float64 `json:"contract_ops_overlapped_tasks_per_s"`
	FloorOverlappedTasksPerSec float64 `json:"floor_overlapped_tasks_per_s"`
	MinimalTasksPerSec         float64 `json:"minimal_worker_tasks_per_s"`
	// DroverOfOpsOverlappedPct and RatioOverlappedPct are Drover's
	// throughput as a percentage of overlapped contract-ops' and of the
	// overlapped floor's in this round.
	DroverOfOpsOverlappedPct float64 `json:"drover_of_contract_ops_overlapped_pct"`
	RatioOverlappedPct       float64 `json:"ratio_overlapped_pct"`
	// DroverOfMinimalPct is Drover's throughput as a percentage of the
	// minimal worker's, MinimalOfOpsOverlappedPct the minimal worker's of
	// overlapped contract-ops'.
	DroverOfMinimalPct        float64 `json:"drover_of_minimal_worker_pct"`
	MinimalOfOpsOverlappedPct float64 `json:"minimal_worker_of_contract_ops_overlapped_pct"`
	// Median marks the round the report's phases are from.
	Median bool `json:"median,omitempty"`
}

// setRounds fills the report's phases from the round with the median
// ratio of Drover to overlapped contract-ops (the lower middle one of an
// even count), and lists every round when there is more than one.
func (r *Report) setRounds(rounds []benchRound) {
	if len(rounds) == 0 {
		return
	}
	order := make([]int, len(rounds))
	for i := range order {
		order[i] = i
	}
	ratio := func(i int) float64 { return pct(rounds[i].Drover, rounds[i].OpsOverlapped) }
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(ratio(a), ratio(b)) })
	m := order[(len(order)-1)/2]
	rd := rounds[m]
	r.Drover, r.Writes = rd.Drover, rd.Writes
	r.OpsOverlapped, r.Minimal, r.FloorOverlapped = rd.OpsOverlapped, rd.Minimal, rd.FloorOverlapped
	if len(rounds) == 1 {
		return
	}
	r.Rounds = make([]Round, len(rounds))
	for i, rd := range rounds {
		r.Rounds[i] = Round{
			DroverTasksPerSec:          rd.Drover.TasksPerSec,
			OpsOverlappedTasksPerSec:   rd.OpsOverlapped.TasksPerSec,
			FloorOverlappedTasksPerSec: rd.FloorOverlapped.TasksPerSec,
			MinimalTasksPerSec:         rd.Minimal.TasksPerSec,
			DroverOfOpsOverlappedPct:   pct(rd.Drover, rd.OpsOverlapped),
			RatioOverlappedPct:         pct(rd.Drover, rd.FloorOverlapped),
			DroverOfMinimalPct:         pct(rd.Drover, rd.Minimal),
			MinimalOfOpsOverlappedPct:  pct(rd.Minimal, rd.OpsOverlapped),
			Median:                     i == m,
		}
	}
	r.Spread = newRoundSpread(r.Rounds)
}

// newRoundSpread is the spread of the ratios of rounds.
func newRoundSpread(rounds []Round) *RoundSpread {
	of := func(f func(Round) float64) Spread {
		v := make([]float64, len(rounds))
		for i, rd := range rounds {
			v[i] = f(rd)
		}
		return newSpread(v)
	}
	return &RoundSpread{
		Rounds:                 len(rounds),
		DroverOfOpsOverlapped:  of(func(rd Round) float64 { return rd.DroverOfOpsOverlappedPct / 100 }),
		DroverOfMinimal:        of(func(rd Round) float64 { return rd.DroverOfMinimalPct / 100 }),
		MinimalOfOpsOverlapped: of(func(rd Round) float64 { return rd.MinimalOfOpsOverlappedPct / 100 }),
		RatioOverlappedPct:     of(func(rd Round) float64 { return rd.RatioOverlappedPct }),
	}
}

// writeRounds prints each round's ratios, their ranges and medians, and
// the medians' confidence intervals.
func writeRounds(w io.Writer, rounds []Round, sp *RoundSpread) {
	if len(rounds) < 2 || sp == nil {
		return
	}
	fmt.Fprintf(w, "\n%d rounds (the tables above are the median round's, marked *):\n", len(rounds))
	for i, rd := range rounds {
		mark := " "
		if rd.Median {
			mark = "*"
		}
		fmt.Fprintf(w, "  %s round %d: drover %.0f tasks/s, %.2f of contract-ops (overlapped, %.0f tasks/s), %.1f%% of the floor (overlapped, %.0f tasks/s), %.2f of the minimal worker (%.0f tasks/s, %.2f of contract-ops)\n",
			mark, i+1, rd.DroverTasksPerSec, rd.DroverOfOpsOverlappedPct/100, rd.OpsOverlappedTasksPerSec, rd.RatioOverlappedPct, rd.FloorOverlappedTasksPerSec,
			rd.DroverOfMinimalPct/100, rd.MinimalTasksPerSec, rd.MinimalOfOpsOverlappedPct/100)
	}
	ops, floor, ofMin, minOfOps := sp.DroverOfOpsOverlapped, sp.RatioOverlappedPct, sp.DroverOfMinimal, sp.MinimalOfOpsOverlapped
	fmt.Fprintf(w, "  drover / contract-ops (overlapped): %.2f-%.2f, median %.2f; drover / floor (overlapped): %.1f-%.1f%%, median %.1f%%\n",
		ops.Min, ops.Max, ops.Median, floor.Min, floor.Max, floor.Median)
	fmt.Fprintf(w, "  drover / minimal worker: %.2f-%.2f, median %.2f; minimal worker / contract-ops (overlapped): %.2f-%.2f, median %.2f\n",
		ofMin.Min, ofMin.Max, ofMin.Median, minOfOps.Min, minOfOps.Max, minOfOps.Median)
	fmt.Fprintf(w, "  confidence intervals of the medians (%.1f%%, order statistics of the rounds): drover / contract-ops (overlapped) %.2f-%.2f; drover / floor (overlapped) %.1f-%.1f%%; drover / minimal worker %.2f-%.2f; minimal worker / contract-ops (overlapped) %.2f-%.2f\n",
		100*ops.Confidence, ops.Lo, ops.Hi, floor.Lo, floor.Hi, ofMin.Lo, ofMin.Hi, minOfOps.Lo, minOfOps.Hi)
}

// median is the median of sorted values (the mean of the middle two of an
// even count).
func median(sorted []float64) float64 {
	n := len(sorted)
	if n%2 == 1 {
		return sorted[n/2]
	}
	return (sorted[n/2-1] + sorted[n/2]) / 2
}
