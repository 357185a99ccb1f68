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
}

// writeRounds prints each round's ratios and their range.
func writeRounds(w io.Writer, rounds []Round) {
	if len(rounds) < 2 {
		return
	}
	ops := make([]float64, len(rounds))
	floor := make([]float64, len(rounds))
	ofMin := make([]float64, len(rounds))
	minOfOps := make([]float64, len(rounds))
	fmt.Fprintf(w, "\n%d rounds (the tables above are the median round's, marked *):\n", len(rounds))
	for i, rd := range rounds {
		mark := " "
		if rd.Median {
			mark = "*"
		}
		fmt.Fprintf(w, "  %s round %d: drover %.0f tasks/s, %.2f of contract-ops (overlapped, %.0f tasks/s), %.1f%% of the floor (overlapped, %.0f tasks/s), %.2f of the minimal worker (%.0f tasks/s, %.2f of contract-ops)\n",
			mark, i+1, rd.DroverTasksPerSec, rd.DroverOfOpsOverlappedPct/100, rd.OpsOverlappedTasksPerSec, rd.RatioOverlappedPct, rd.FloorOverlappedTasksPerSec,
			rd.DroverOfMinimalPct/100, rd.MinimalTasksPerSec, rd.MinimalOfOpsOverlappedPct/100)
		ops[i], floor[i] = rd.DroverOfOpsOverlappedPct/100, rd.RatioOverlappedPct
		ofMin[i], minOfOps[i] = rd.DroverOfMinimalPct/100, rd.MinimalOfOpsOverlappedPct/100
	}
	for _, v := range [][]float64{ops, floor, ofMin, minOfOps} {
		slices.Sort(v)
	}
	fmt.Fprintf(w, "  drover / contract-ops (overlapped): %.2f-%.2f, median %.2f; drover / floor (overlapped): %.1f-%.1f%%, median %.1f%%\n",
		ops[0], ops[len(ops)-1], median(ops), floor[0], floor[len(floor)-1], median(floor))
	fmt.Fprintf(w, "  drover / minimal worker: %.2f-%.2f, median %.2f; minimal worker / contract-ops (overlapped): %.2f-%.2f, median %.2f\n",
		ofMin[0], ofMin[len(ofMin)-1], median(ofMin), minOfOps[0], minOfOps[len(minOfOps)-1], median(minOfOps))
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
