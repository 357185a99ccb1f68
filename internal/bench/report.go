package bench

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"text/tabwriter"
	"time"
)

// Targets of the design, printed next to the figures.
const (
	// TargetRatioPct is the share of the floor Drover should reach at pool
	// 16 on nats-server's default sync interval.
	TargetRatioPct = 25.0
	// MaxWritesPerTask bounds the stored writes of a cold one-round task,
	// the request excluded.
	MaxWritesPerTask = 10.0
)

// Phase is what one phase measured.
type Phase struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// Elapsed runs from the first submit to the last terminal event (the
	// last ack, for the raw phases).
	Elapsed     time.Duration `json:"-"`
	ElapsedS    float64       `json:"elapsed_s"`
	TasksPerSec float64       `json:"tasks_per_s"`
	// P50 and P99 are submit-to-terminal latencies (submit-to-ack for the
	// raw phases).
	P50   time.Duration `json:"-"`
	P99   time.Duration `json:"-"`
	P50MS float64       `json:"p50_ms"`
	P99MS float64       `json:"p99_ms"`
	// CPUPerTask is the process's CPU time (user and system, the embedded
	// server's included) per task; Cores is that CPU time over Elapsed.
	CPUPerTask   time.Duration `json:"-"`
	CPUPerTaskUS float64       `json:"cpu_per_task_us"`
	Cores        float64       `json:"cores"`
	// WritesPerTask counts stored writes per task, the request included
	// (the raw phases; the Drover phase has Report.Writes).
	WritesPerTask float64 `json:"writes_per_task,omitempty"`
}

// Report is the result of a bench run.
type Report struct {
	Tasks       int    `json:"tasks"`
	Concurrency int    `json:"concurrency"`
	Sync        string `json:"sync"`
	Server      string `json:"server"`
	GoVersion   string `json:"go_version"`
	GOMAXPROCS  int    `json:"gomaxprocs"`
	NumCPU      int    `json:"num_cpu"`
	Drover      Phase  `json:"drover"`
	Floor       Phase  `json:"floor"`
	// Ops is the contract-ops phase: Drover's JetStream operations for the
	// same tasks, without Drover's code.
	Ops Phase `json:"contract_ops"`
	// RatioPct is Drover's throughput as a percentage of the floor's.
	RatioPct float64 `json:"ratio_pct"`
	// OpsRatioPct is the contract-ops phase's throughput as a percentage
	// of the floor's: the most any implementation of the contract reaches
	// here. DroverOfOpsPct is Drover's as a percentage of it.
	OpsRatioPct    float64 `json:"contract_ops_ratio_pct"`
	DroverOfOpsPct float64 `json:"drover_of_contract_ops_pct"`
	Writes         Writes  `json:"writes"`
}

// newPhase computes throughput and latency percentiles from each task's
// submit and end times; a zero end time is a task that never ended.
func newPhase(submit, end []time.Time) Phase {
	var (
		ph          Phase
		first, last time.Time
		lat         = make([]time.Duration, 0, len(submit))
	)
	for i, s := range submit {
		if first.IsZero() || s.Before(first) {
			first = s
		}
		if end[i].IsZero() {
			continue
		}
		if end[i].After(last) {
			last = end[i]
		}
		lat = append(lat, end[i].Sub(s))
	}
	slices.Sort(lat)
	ph.Completed = len(lat)
	ph.Elapsed = last.Sub(first)
	ph.ElapsedS = ph.Elapsed.Seconds()
	if ph.Elapsed > 0 {
		ph.TasksPerSec = float64(len(lat)) / ph.Elapsed.Seconds()
	}
	ph.P50, ph.P99 = percentile(lat, 50), percentile(lat, 99)
	ph.P50MS, ph.P99MS = ms(ph.P50), ms(ph.P99)
	return ph
}

// setCPU records the CPU time the phase used.
func (ph *Phase) setCPU(cpu time.Duration, n int) {
	if cpu <= 0 || n <= 0 {
		return
	}
	ph.CPUPerTask = cpu / time.Duration(n)
	ph.CPUPerTaskUS = float64(ph.CPUPerTask.Nanoseconds()) / 1000
	if ph.Elapsed > 0 {
		ph.Cores = cpu.Seconds() / ph.Elapsed.Seconds()
	}
}

// percentile is the nearest-rank percentile p of sorted durations.
func percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// finish computes the ratios once the phases ran.
func (r *Report) finish() {
	if r.Floor.TasksPerSec > 0 {
		r.RatioPct = 100 * r.Drover.TasksPerSec / r.Floor.TasksPerSec
		r.OpsRatioPct = 100 * r.Ops.TasksPerSec / r.Floor.TasksPerSec
	}
	if r.Ops.TasksPerSec > 0 {
		r.DroverOfOpsPct = 100 * r.Drover.TasksPerSec / r.Ops.TasksPerSec
	}
}

// WriteJSON writes the report as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report as a table for people.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "drover bench: %d tasks, pool %d, sync %s, %s server, %s, GOMAXPROCS %d (%d CPUs)\n\n",
		r.Tasks, r.Concurrency, r.Sync, r.Server, r.GoVersion, r.GOMAXPROCS, r.NumCPU)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\ttasks/s\tp50\tp99\telapsed\tCPU/task\tcores\tdone\tfailed\t")
	row := func(name string, p Phase) {
		fmt.Fprintf(tw, "%-12s\t%.0f\t%s\t%s\t%s\t%s\t%.2f\t%d\t%d\t\n", name, p.TasksPerSec, round(p.P50), round(p.P99),
			round(p.Elapsed), round(p.CPUPerTask), p.Cores, p.Completed, p.Failed)
	}
	row("drover", r.Drover)
	row("contract-ops", r.Ops)
	row("floor", r.Floor)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\nCPU is the whole process's (the embedded server's too); cores = CPU time / elapsed\n")
	fmt.Fprintf(w, "ratio: %.1f%% of the floor (target at pool 16 on default sync: >= %.0f%%)\n", r.RatioPct, TargetRatioPct)
	fmt.Fprintf(w, "  contract-ops (Drover's JetStream operations, none of its code): %.1f%% of the floor; Drover runs at %.0f%% of it\n",
		r.OpsRatioPct, r.DroverOfOpsPct)
	fmt.Fprintf(w, "stored writes per task: %.2f including the request, %.2f excluding it (target: <= %.0f); floor %.2f including\n",
		r.Writes.PerTask, r.Writes.PerTaskExcl, MaxWritesPerTask, r.Floor.WritesPerTask)
	for _, s := range r.Writes.Streams {
		fmt.Fprintf(w, "  %-24s %8d  (%.2f per task)\n", s.Stream, s.Writes, float64(s.Writes)/float64(max(r.Tasks, 1)))
	}
	_, err := fmt.Fprintf(w, "  %-24s %8d\n", "total", r.Writes.Total)
	return err
}

// round shortens a duration for the table.
func round(d time.Duration) time.Duration {
	switch {
	case d >= time.Second:
		return d.Round(10 * time.Millisecond)
	case d >= time.Millisecond:
		return d.Round(10 * time.Microsecond)
	}
	return d.Round(time.Microsecond)
}
