package tune

import (
	"math"
	"slices"
	"strings"
	"time"

	"github.com/droverhq/drover/subjects"
)

// Report is what Analyze found and recommends.
type Report struct {
	// Events is how many audit events were read; Undecodable of them did
	// not decode and were skipped.
	Events      int `json:"events"`
	Undecodable int `json:"undecodable"`
	// Tasks is how many tasks they belong to.
	Tasks      int     `json:"tasks"`
	Percentile float64 `json:"percentile"`
	Headroom   float64 `json:"headroom"`
	// Roles holds, per role in pipeline order, a row for all types (Type
	// "") and then one per type.
	Roles    []RoleStats `json:"roles"`
	Timeouts []Timeout   `json:"timeouts"`
	Types    []TypeStats `json:"types"`
}

// RoleStats are one role's runs, of one task type or of all (Type "").
type RoleStats struct {
	Role subjects.Role `json:"role"`
	Type string        `json:"type,omitempty"`
	// Runs counts successful, uncached runs; the percentiles are of their
	// durations (nearest rank).
	Runs  int   `json:"runs"`
	P50MS int64 `json:"p50_ms"`
	P95MS int64 `json:"p95_ms"`
	P99MS int64 `json:"p99_ms"`
	// Timeouts and Failures count task_retried events: those whose error
	// says the role timed out, and the others.
	Timeouts int `json:"timeouts"`
	Failures int `json:"failures"`
}

// Timeout is the recommended timeout of one role.
type Timeout struct {
	Role subjects.Role `json:"role"`
	// Runs is how many durations it is based on.
	Runs int `json:"runs"`
	// PercentileMS is Report.Percentile of those durations.
	PercentileMS int64 `json:"percentile_ms"`
	// Timeout is PercentileMS × Report.Headroom rounded up by Readable.
	Timeout   string `json:"timeout"`
	TimeoutMS int64  `json:"timeout_ms"`
}

// TypeStats are one task type's rounds and verdicts.
type TypeStats struct {
	Type      string `json:"type"`
	Completed int    `json:"completed"`
	Failed    int    `json:"failed"`
	// Rounds[i] counts completed tasks that needed i+1 rounds; Verdicts[i]
	// and Rejections[i] count the judge's verdicts and rejections in round
	// i+1.
	Rounds     []int `json:"rounds"`
	Verdicts   []int `json:"verdicts"`
	Rejections []int `json:"rejections"`
	// RoundsNeeded is the smallest n such that RoundsQuantile percent of
	// the completed tasks needed n rounds or fewer; MaxAttempts is the
	// recommendation, RoundsNeeded + 1 within 1 to 10 (0: no completed task).
	RoundsNeeded  int  `json:"rounds_needed"`
	MaxAttempts   int  `json:"max_attempts"`
	LowConfidence bool `json:"low_confidence"`
}

// build aggregates a history whose types are resolved.
func build(h *history, opts Options) *Report {
	rep := &Report{Events: h.events, Undecodable: h.undecodable, Tasks: len(h.types),
		Percentile: opts.Percentile, Headroom: opts.Headroom}
	typeOf := func(o observation) string { return h.types[o.key] }

	byType := map[string]*TypeStats{}
	stats := func(ty string) *TypeStats {
		if byType[ty] == nil {
			byType[ty] = &TypeStats{Type: ty, Rounds: []int{}, Verdicts: []int{}, Rejections: []int{}}
		}
		return byType[ty]
	}
	for _, o := range h.verdicts {
		ts, i := stats(typeOf(o)), max(o.round, 1)-1
		ts.Verdicts = grow(ts.Verdicts, i)
		ts.Rejections = grow(ts.Rejections, i)
		ts.Verdicts[i]++
		if o.reject {
			ts.Rejections[i]++
		}
	}
	for _, o := range h.ends {
		ts := stats(typeOf(o))
		if !o.done {
			ts.Failed++
			continue
		}
		i := max(o.round, 1) - 1
		ts.Completed++
		ts.Rounds = grow(ts.Rounds, i)
		ts.Rounds[i]++
	}
	for _, ty := range sortedKeys(byType) {
		ts := byType[ty]
		ts.Verdicts = grow(ts.Verdicts, len(ts.Rounds)-1)
		ts.Rejections = grow(ts.Rejections, len(ts.Verdicts)-1)
		ts.RoundsNeeded, ts.MaxAttempts = maxAttempts(ts.Rounds, ts.Completed)
		ts.LowConfidence = ts.Completed < LowConfidence
		rep.Types = append(rep.Types, *ts)
	}

	for _, role := range subjects.Roles {
		var all []int64
		perType := map[string][]int64{}
		for _, o := range h.durations {
			if o.role == role {
				all = append(all, o.ms)
				perType[typeOf(o)] = append(perType[typeOf(o)], o.ms)
			}
		}
		fails := map[string][2]int{}
		for _, o := range h.failures {
			if o.role == role {
				for _, ty := range []string{"", typeOf(o)} {
					f := fails[ty]
					if o.timeout {
						f[0]++
					} else {
						f[1]++
					}
					fails[ty] = f
				}
			}
		}
		if len(all) == 0 && fails[""] == [2]int{} {
			continue
		}
		rep.Roles = append(rep.Roles, roleStats(role, "", all, fails[""]))
		types := sortedKeys(perType)
		for ty := range fails {
			if ty != "" && !slices.Contains(types, ty) {
				types = append(types, ty)
			}
		}
		slices.Sort(types)
		for _, ty := range types {
			rep.Roles = append(rep.Roles, roleStats(role, ty, perType[ty], fails[ty]))
		}
		if len(all) > 0 {
			p := percentile(all, opts.Percentile)
			d := Readable(time.Duration(float64(p) * opts.Headroom * float64(time.Millisecond)))
			rep.Timeouts = append(rep.Timeouts, Timeout{Role: role, Runs: len(all), PercentileMS: p,
				Timeout: FormatDuration(d), TimeoutMS: d.Milliseconds()})
		}
	}
	return rep
}

func roleStats(role subjects.Role, ty string, ms []int64, fails [2]int) RoleStats {
	return RoleStats{Role: role, Type: ty, Runs: len(ms), P50MS: percentile(ms, 50), P95MS: percentile(ms, 95),
		P99MS: percentile(ms, 99), Timeouts: fails[0], Failures: fails[1]}
}

// percentile is the nearest-rank p-th percentile of xs (0 when empty): the
// smallest value that at least p percent of xs are at or below.
func percentile(xs []int64, p float64) int64 {
	if len(xs) == 0 {
		return 0
	}
	s := slices.Sorted(slices.Values(xs))
	rank := int(math.Ceil(p*float64(len(s))/100 - 1e-9))
	return s[min(max(rank, 1), len(s))-1]
}

// maxAttempts returns the rounds that RoundsQuantile percent of the
// completed tasks needed, and that plus one within 1 to MaxMaxAttempts.
func maxAttempts(rounds []int, completed int) (needed, recommend int) {
	if completed == 0 {
		return 0, 0
	}
	covered := 0
	for i, n := range rounds {
		covered += n
		if float64(covered)*100 >= RoundsQuantile*float64(completed)-1e-9 {
			needed = i + 1
			break
		}
	}
	return needed, min(max(needed+1, 1), subjects.MaxMaxAttempts)
}

// Readable rounds d up to a unit a person would write: 30s steps up to a
// minute, whole minutes up to 10m, 5m steps up to an hour, 30m steps up to
// 6h, whole hours beyond; never below MinTimeout. 1m30s becomes 2m.
func Readable(d time.Duration) time.Duration {
	unit := time.Hour
	for _, s := range []struct{ upTo, unit time.Duration }{
		{time.Minute, 30 * time.Second}, {10 * time.Minute, time.Minute},
		{time.Hour, 5 * time.Minute}, {6 * time.Hour, 30 * time.Minute},
	} {
		if d <= s.upTo {
			unit = s.unit
			break
		}
	}
	d = (d + unit - 1) / unit * unit
	return max(d, MinTimeout)
}

// FormatDuration writes d without zero trailing units: 2m, 1h30m, 45s.
func FormatDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

// grow extends xs with zeros so that index i exists.
func grow(xs []int, i int) []int {
	for len(xs) <= i {
		xs = append(xs, 0)
	}
	return xs
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
