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
	// MaxWritesPerTask bounds the stored writes of a cold one-round task,
	// the request excluded.
	MaxWritesPerTask = 11.0
	// TargetRoleGapP99 and TargetSubmitToStart are the targets of the
	// latency phase on an idle worker at the server's default sync.
	TargetRoleGapP99    = 5 * time.Millisecond
	TargetSubmitToStart = 20 * time.Millisecond
	// TargetCached1000 is the target of a cached re-run of 1,000 tasks on
	// the embedded default (fsync before ack).
	TargetCached1000 = 2 * time.Second
)

// Phase is what one phase measured.
type Phase struct {
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	// Elapsed runs from the first submit to the last terminal event read
	// (the last ack, for the lab's raw phases).
	Elapsed     time.Duration `json:"-"`
	ElapsedS    float64       `json:"elapsed_s"`
	TasksPerSec float64       `json:"tasks_per_s"`
	// P50 and P99 are submit-to-terminal latencies (submit-to-ack for the
	// lab's raw phases).
	P50   time.Duration `json:"-"`
	P99   time.Duration `json:"-"`
	P50MS float64       `json:"p50_ms"`
	P99MS float64       `json:"p99_ms"`
	// CPUPerTask is the process's CPU time (user and system, the embedded
	// server's included) per task; Cores is that CPU time over Elapsed.
	CPUPerTask   time.Duration `json:"-"`
	CPUPerTaskUS float64       `json:"cpu_per_task_us"`
	Cores        float64       `json:"cores"`
	// AllocsPerTask and AllocBytesPerTask are the process's heap
	// allocations per task (the embedded server's included).
	AllocsPerTask     float64 `json:"allocs_per_task"`
	AllocBytesPerTask float64 `json:"alloc_bytes_per_task"`
	// GCCycles is how many garbage collections the process ran during the
	// phase. Every timed phase starts from a collected heap (CollectHeap).
	GCCycles uint64 `json:"gc_cycles"`
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
	Writes      Writes `json:"writes"`
	// Latency and Cached are the latency and cached phases, when run.
	Latency *Latency `json:"latency,omitempty"`
	Cached  *Cached  `json:"cached,omitempty"`
	// Agents is the agents phase, when run.
	Agents *Agents `json:"agents,omitempty"`
	// Workspace is the workspace phase, when run.
	Workspace *Workspace `json:"workspace,omitempty"`
}

// NewPhase computes throughput and latency percentiles from each task's
// submit and end times; a zero end time is a task that never ended.
func NewPhase(submit, end []time.Time) Phase {
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
	ph.P50, ph.P99 = Percentile(lat, 50), Percentile(lat, 99)
	ph.P50MS, ph.P99MS = MS(ph.P50), MS(ph.P99)
	return ph
}

// SetUsage records the CPU time and allocations the phase's n tasks used.
func (ph *Phase) SetUsage(u Usage, n int) {
	if n <= 0 {
		return
	}
	ph.AllocsPerTask = float64(u.allocs) / float64(n)
	ph.AllocBytesPerTask = float64(u.bytes) / float64(n)
	ph.GCCycles = u.gcs
	cpu := u.cpu
	if cpu <= 0 {
		return
	}
	ph.CPUPerTask = cpu / time.Duration(n)
	ph.CPUPerTaskUS = float64(ph.CPUPerTask.Nanoseconds()) / 1000
	if ph.Elapsed > 0 {
		ph.Cores = cpu.Seconds() / ph.Elapsed.Seconds()
	}
}

// Percentile is the nearest-rank percentile p of sorted durations.
func Percentile(sorted []time.Duration, p int) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	return sorted[max(rank, 1)-1]
}

// MS is d in milliseconds, to the microsecond.
func MS(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// WriteJSON writes the report as one indented JSON object.
func (r *Report) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// WriteText writes the report as tables for people.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "drover bench: %d tasks, pool %d, sync %s, %s server, %s, GOMAXPROCS %d (%d CPUs)\n\n",
		r.Tasks, r.Concurrency, r.Sync, r.Server, r.GoVersion, r.GOMAXPROCS, r.NumCPU)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "\ttasks/s\tp50\tp99\telapsed\tCPU/task\tcores\tallocs/task\tKiB/task\tGCs\tdone\tfailed\t")
	p := r.Drover
	fmt.Fprintf(tw, "%-8s\t%.0f\t%s\t%s\t%s\t%s\t%.2f\t%.0f\t%.1f\t%d\t%d\t%d\t\n", "drover", p.TasksPerSec, round(p.P50), round(p.P99),
		round(p.Elapsed), round(p.CPUPerTask), p.Cores, p.AllocsPerTask, p.AllocBytesPerTask/1024, p.GCCycles, p.Completed, p.Failed)
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintf(w, "\neach task timed from its submit to its terminal event read from the audit stream\n")
	fmt.Fprintf(w, "CPU, allocations and GCs (collections) are the whole process's (the embedded server's too); cores = CPU time / elapsed\n")
	fmt.Fprintf(w, "stored writes per task: %.2f including the request, %.2f excluding it (target: <= %.0f)\n",
		r.Writes.PerTask, r.Writes.PerTaskExcl, MaxWritesPerTask)
	writeStreamWrites(w, r.Writes, r.Tasks)
	if r.Latency != nil {
		writeLatency(w, r.Latency)
	}
	if r.Cached != nil {
		if err := writeCached(w, r.Cached); err != nil {
			return err
		}
	}
	if r.Agents != nil {
		writeAgents(w, r.Agents)
	}
	if r.Workspace != nil {
		writeWorkspace(w, r.Workspace)
	}
	return nil
}

// writeStreamWrites lists the stored writes of each stream.
func writeStreamWrites(w io.Writer, wr Writes, tasks int) {
	for _, s := range wr.Streams {
		fmt.Fprintf(w, "  %-24s %8d  (%.2f per task)\n", s.Stream, s.Writes, float64(s.Writes)/float64(max(tasks, 1)))
	}
	fmt.Fprintf(w, "  %-24s %8d\n", "total", wr.Total)
}

// writeLatency prints the latency phase.
func writeLatency(w io.Writer, l *Latency) {
	fmt.Fprintf(w, "\nlatency on an idle worker, %d tasks one at a time, sim latency 0, sync %s:\n", l.Tasks, l.Sync)
	writeDist(w, "role to role", l.RoleGap)
	writeDist(w, "submit to planner start", l.SubmitToStart)
	writeDist(w, "submit to terminal", l.SubmitToEnd)
	fmt.Fprintf(w, "  targets at default sync: role to role p99 < %s, submit to planner start < %s\n", TargetRoleGapP99, TargetSubmitToStart)
}

// writeAgents prints the agents phase.
func writeAgents(w io.Writer, a *Agents) {
	fmt.Fprintf(w, "\nagents: %d tasks at once on one worker with a pool slot for each, each role's runner waiting %s-%s (mean %s):\n",
		a.Tasks, round(a.RoleWait/2), round(a.RoleWait*3/2), round(a.RoleWait))
	fmt.Fprintf(w, "  all %d planners started within %s of the first submit (each held until the last one started)\n", a.Tasks, round(a.Start))
	fmt.Fprintf(w, "  %d completed, %d failed in %s; the start and the longest task's waits alone take %s (%s more)\n",
		a.Completed, a.Failed, round(a.Elapsed), round(a.Ideal), round(a.Elapsed-a.Ideal))
	whose := "the process's"
	if a.InProcessServer {
		whose = "the process's, the embedded server's included"
	}
	fmt.Fprintf(w, "  per agent (%s): %.1f KiB of live heap with the fleet started, %.1f KiB at the peak of the run (with what the tasks stored), %.2f goroutines; at most %d runners waiting at once\n",
		whose, a.HeapStartKiB, a.HeapPeakKiB, a.GoroutinesPerAgent, a.Peak)
	fmt.Fprintf(w, "  CPU %s per task, %.2f cores over the run\n", round(a.CPUPerTask), a.Cores)
	writeDist(w, "role to role", a.RoleGap)
	writeDist(w, "submit to planner start", a.SubmitToStart)
}

// writeWorkspace prints the workspace phase.
func writeWorkspace(w io.Writer, ws *Workspace) {
	fmt.Fprintf(w, "\nworkspace overhead, %d tasks one at a time on the repository (%d files, %.1f MiB), nothing pushed:\n",
		ws.Tasks, ws.Files, float64(ws.Bytes)/(1<<20))
	fmt.Fprintf(w, "  mirror's start (first clone) %s, first open (adds the worktree) %s\n", round(ws.MirrorStart), round(ws.FirstOpen))
	writeDist(w, "open", ws.Open)
	writeDist(w, "commit and record", ws.Commit)
	writeDist(w, "release", ws.Release)
	writeDist(w, "total per task", ws.Total)
}

// writeDist prints one distribution of the latency or agents phase.
func writeDist(w io.Writer, name string, d Dist) {
	fmt.Fprintf(w, "  %-24s p50 %-10s p99 %-10s max %-10s (n %d)\n", name, round(d.P50), round(d.P99), round(d.Max), d.N)
}

// writeCached prints the cached phase.
func writeCached(w io.Writer, c *Cached) error {
	fmt.Fprintf(w, "\ncached re-run, %d unchanged tasks through the wire contract, sync %s:\n", c.Tasks, c.Sync)
	fmt.Fprintf(w, "  cold run: %s (%.0f tasks/s)   cached run: %s (%.0f tasks/s), %d cache hits, %d runner calls (target for 1,000 tasks: < %s)\n",
		round(c.Cold.Elapsed), c.Cold.TasksPerSec, round(c.Warm.Elapsed), c.Warm.TasksPerSec, c.Hits, c.Misses, TargetCached1000)
	fmt.Fprintf(w, "  cached run's stored writes per task: %.2f including the request, %.2f excluding it\n", c.Writes.PerTask, c.Writes.PerTaskExcl)
	writeStreamWrites(w, c.Writes, c.Tasks)
	if d := c.Disk; d != nil {
		fmt.Fprintf(w, "  the store's disk: a 1 KiB write and its fsync take p50 %s, p99 %s (%d, one after another); the audit stream syncs its %d events per cached task one after another: at least %s for %d tasks\n",
			round(d.Writes.P50), round(d.Writes.P99), d.Writes.N, eventsPerCachedTask, round(d.AuditFloor), c.Tasks)
	}
	return nil
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
