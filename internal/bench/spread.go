package bench

import (
	"math"
	"slices"
)

// Spread is how a ratio spread over the rounds of a run: its range, its
// median, and a confidence interval of the median.
type Spread struct {
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	Median float64 `json:"median"`
	// Lo and Hi bound the median with probability Confidence: two order
	// statistics of the rounds (the sign test's interval), which assume
	// only that the rounds are independent draws of one ratio, nothing of
	// its distribution.
	Lo         float64 `json:"ci_lo"`
	Hi         float64 `json:"ci_hi"`
	Confidence float64 `json:"ci_confidence"`
}

// RoundSpread is the spread of Drover's ratios over the rounds.
type RoundSpread struct {
	Rounds int `json:"rounds"`
	// DroverOfOpsOverlapped and MinimalOfOpsOverlapped are Drover's and the
	// minimal worker's throughput over overlapped contract-ops';
	// DroverOfMinimal Drover's over the minimal worker's.
	DroverOfOpsOverlapped  Spread `json:"drover_of_contract_ops_overlapped"`
	DroverOfMinimal        Spread `json:"drover_of_minimal_worker"`
	MinimalOfOpsOverlapped Spread `json:"minimal_worker_of_contract_ops_overlapped"`
	// RatioOverlappedPct is Drover's throughput as a percentage of the
	// overlapped floor's.
	RatioOverlappedPct Spread `json:"ratio_overlapped_pct"`
}

// ciLevel is the confidence a median's interval aims at. Five rounds or
// fewer cannot reach it: their interval is their range, with the
// confidence the range has (93.75% for five).
const ciLevel = 0.95

// newSpread is the spread of values, of which there is at least one.
func newSpread(values []float64) Spread {
	s := slices.Sorted(slices.Values(values))
	n := len(s)
	k, conf := medianRank(n, ciLevel)
	return Spread{Min: s[0], Max: s[n-1], Median: median(s), Lo: s[k-1], Hi: s[n-k], Confidence: conf}
}

// medianRank is the largest k for which the k-th smallest and the k-th
// largest of n independent draws enclose the median with probability at
// least level, and that probability, 1 - 2 P(Binomial(n, 1/2) < k); when
// none does, 1 (the range) and the range's.
func medianRank(n int, level float64) (int, float64) {
	cover := func(k int) float64 {
		below, c := 0.0, 1.0 // P(Binomial < k) * 2^n; C(n, 0)
		for i := range k {
			below += c
			c = c * float64(n-i) / float64(i+1)
		}
		return 1 - 2*below/math.Pow(2, float64(n))
	}
	k := 1
	for 2*(k+1) <= n+1 && cover(k+1) >= level {
		k++
	}
	return k, cover(k)
}
