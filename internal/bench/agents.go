package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"runtime/metrics"
	"sync"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Agents is what the agents phase measured: how many agents one worker
// drives at once, and what each costs it. Tasks cold one-round tasks are
// submitted together to a worker with a pool slot for each. Every
// planner is held until the last one has started, so the whole fleet is
// in flight at once; then each role's sim runner waits a time of its own,
// spread evenly over [RoleWait/2, 3*RoleWait/2] across the tasks, as the
// agents of a fleet each take their own time.
type Agents struct {
	Tasks int `json:"tasks"`
	// RoleWait is the mean wait of a role's runner.
	RoleWait   time.Duration `json:"-"`
	RoleWaitMS float64       `json:"role_wait_ms"`
	Completed  int           `json:"completed"`
	Failed     int           `json:"failed"`
	// Start runs from the first submit to the last planner starting: the
	// time the fleet took to be all in flight.
	Start  time.Duration `json:"-"`
	StartS float64       `json:"start_s"`
	// Elapsed runs from the first submit to the last terminal event;
	// Ideal is Start plus the longest task's three waits, what a worker
	// that cost nothing after the start would take.
	Elapsed  time.Duration `json:"-"`
	Ideal    time.Duration `json:"-"`
	ElapsedS float64       `json:"elapsed_s"`
	IdealS   float64       `json:"ideal_s"`
	// Peak is the most runner calls waiting at once.
	Peak int64 `json:"peak"`
	// HeapStartKiB is the growth of the live heap from the idle worker to
	// the fleet all in flight (a collection forced then, every agent in
	// its planner), per agent; HeapPeakKiB to the peak over the run, as
	// collections found it, which also holds what the tasks stored (with
	// InProcessServer, the embedded server's caches of its streams);
	// GoroutinesPerAgent is the growth of the goroutines to their peak,
	// per agent. All are the process's: with InProcessServer, the
	// embedded server's too.
	HeapStartKiB       float64 `json:"heap_start_per_agent_kib"`
	HeapPeakKiB        float64 `json:"heap_peak_per_agent_kib"`
	GoroutinesPerAgent float64 `json:"goroutines_per_agent"`
	InProcessServer    bool    `json:"in_process_server"`
	// CPUPerTask and Cores are the process's over the run, as for the
	// other phases, less the forced collection.
	CPUPerTask   time.Duration `json:"-"`
	CPUPerTaskUS float64       `json:"cpu_per_task_us"`
	Cores        float64       `json:"cores"`
	// RoleGap and SubmitToStart are the pipeline's observations, as in
	// the latency phase, with the whole fleet in flight.
	RoleGap       Dist `json:"role_gap"`
	SubmitToStart Dist `json:"submit_to_start"`
}

// agentWait is task i's wait per role, of n tasks whose mean wait is
// mean: spread evenly over [mean/2, 3*mean/2], in milliseconds (the sim's
// unit).
func agentWait(i, n int, mean time.Duration) int {
	m := int(mean.Milliseconds())
	if n <= 1 {
		return m
	}
	return m/2 + m*i/(n-1)
}

// agentRequests makes the agents phase's tasks: cold ones, each with its
// runners' wait in metadata.sim.
func agentRequests(wf string, n int, mean time.Duration) func(int) subjects.TaskRequest {
	scope := coldScope(wf)
	return func(i int) subjects.TaskRequest {
		req := benchRequest(wf, i, scope)
		wait := agentWait(i, n, mean)
		ctl, _ := json.Marshal(subjects.SimControls{LatencyMS: map[subjects.Role]int{
			subjects.RolePlanner: wait, subjects.RoleImplementer: wait, subjects.RoleJudge: wait}})
		req.Metadata = map[string]json.RawMessage{"sim": ctl}
		return req
	}
}

// fleetStart holds every planner call until n have started, so the
// fleet is all in flight at once when the phase counts its heap: without
// it, the first planners to end could end before the last ones start,
// and whether they did would depend on the machine's speed.
type fleetStart struct {
	n       int64
	started atomic.Int64
	at      time.Time     // when the last one started; read once all is closed
	all     chan struct{} // closed when n planners have started
	release chan struct{} // closed by the phase once it has counted
}

func newFleetStart(n int) *fleetStart {
	return &fleetStart{n: int64(n), all: make(chan struct{}), release: make(chan struct{})}
}

// planner is sim's planner, held until the phase releases the fleet.
func (f *fleetStart) planner(sim *runner.Sim) runner.Runner {
	return runner.Func{ID: sim.Identity(), InCaller: true, F: func(ctx context.Context, req runner.Request) (runner.Result, error) {
		if f.started.Add(1) == f.n {
			f.at = time.Now()
			close(f.all)
		}
		select {
		case <-f.release:
		case <-ctx.Done():
			return runner.Result{}, context.Cause(ctx)
		}
		return sim.Run(ctx, req)
	}}
}

// The runtime's live heap (as the last collection found it) and goroutine
// count.
const (
	liveHeapMetric   = "/gc/heap/live:bytes"
	goroutinesMetric = "/sched/goroutines:goroutines"
)

// footprint reads the live heap and the goroutines.
func footprint() (heap, goroutines uint64) {
	s := []metrics.Sample{{Name: liveHeapMetric}, {Name: goroutinesMetric}}
	metrics.Read(s)
	for i, dst := range []*uint64{&heap, &goroutines} {
		if s[i].Value.Kind() == metrics.KindUint64 {
			*dst = s[i].Value.Uint64()
		}
	}
	return heap, goroutines
}

// perAgentKiB is the growth from heap0 to heap, in KiB per agent of n.
func perAgentKiB(heap, heap0 uint64, n int) float64 {
	return (float64(heap) - float64(heap0)) / 1024 / float64(n)
}

// peaks keeps the highest footprint seen, for the watcher and the
// phase's goroutine both.
type peaks struct {
	mu               sync.Mutex
	heap, goroutines uint64
}

func (p *peaks) see() {
	h, g := footprint()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.heap, p.goroutines = max(p.heap, h), max(p.goroutines, g)
}

// agentsPoll is how often the agents phase reads the footprint.
const agentsPoll = 10 * time.Millisecond

// runAgents runs the agents phase: it answers "how many agents can one
// pod drive" with what a fleet of cfg.Agents in flight costs one worker.
func runAgents(ctx context.Context, cfg Config, url string) (*Agents, error) {
	n := cfg.Agents
	rep := &Agents{Tasks: n, RoleWait: cfg.AgentLatency, RoleWaitMS: MS(cfg.AgentLatency), InProcessServer: cfg.URL == ""}
	longest := 3 * time.Duration(agentWait(n-1, n, cfg.AgentLatency)) * time.Millisecond // the spread rises with i
	wcfg := cfg
	wcfg.Concurrency = n
	err := withOwn(ctx, cfg, url, func(o own) error {
		ctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout, ErrTimeout)
		defer cancel()
		fail := func(err error, what string) error {
			if errors.Is(context.Cause(ctx), ErrTimeout) {
				err = fmt.Errorf("%w after %s (raise --timeout)", ErrTimeout, cfg.Timeout)
			}
			return fmt.Errorf("bench: agents phase, %s: %w", what, err)
		}
		wf := NewWorkflowID()
		var obs observed
		sim := runner.NewSim(runner.SimOptions{})
		fleet := newFleetStart(n)
		stop, err := startWorker(ctx, wcfg, o.ncW, o.settings, &obs, runner.Set{Planner: fleet.planner(sim), Implementer: sim, Judge: sim})
		if err != nil {
			return err
		}
		after, err := producer.AuditLastSeq(ctx, o.js, cfg.Names)
		if err != nil {
			return errors.Join(fmt.Errorf("bench: %w", err), stop())
		}
		f := follow(ctx, o.js, cfg.Names, wf, after, n)
		defer f.stop()
		CollectHeap()
		heap0, g0 := footprint()
		var peak peaks
		submit := make([]time.Time, n)
		use := MeasureUsage()
		var gcCPU time.Duration

		// The watcher reads the footprint as collections find it until the
		// phase ends; the phase's goroutine forces one collection when the
		// fleet is all in flight, and then releases it.
		phaseDone, watched := make(chan struct{}), make(chan struct{})
		go func() {
			defer close(watched)
			tick := time.NewTicker(agentsPoll)
			defer tick.Stop()
			for {
				select {
				case <-phaseDone:
					return
				case <-tick.C:
					peak.see()
				}
			}
		}()
		released := false
		err = submitTasks(ctx, cfg, o.js, submit, agentRequests(wf, n, cfg.AgentLatency))
		if err != nil {
			err = fail(err, "submitting")
		} else {
			select {
			case <-fleet.all:
				rep.Start = fleet.at.Sub(submit[0])
				cpu := processCPU()
				runtime.GC()
				heapStart, _ := footprint()
				rep.HeapStartKiB = perAgentKiB(heapStart, heap0, n)
				peak.see()
				gcCPU = processCPU() - cpu
				close(fleet.release)
				released = true
				if ferr := f.wait(); ferr != nil {
					err = fail(ferr, fmt.Sprintf("%d of %d tasks ended", f.completed+f.failed, n))
				}
			case <-ctx.Done():
				err = fail(context.Cause(ctx), fmt.Sprintf("%d of %d planners started", fleet.started.Load(), n))
			}
		}
		if !released { // let held planners go, so the worker drains
			close(fleet.release)
		}
		used := use.Since()
		close(phaseDone)
		<-watched
		if serr := stop(); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		used.cpu -= gcCPU
		ph := NewPhase(submit, f.end)
		rep.Completed, rep.Failed = f.completed, f.failed
		ph.SetUsage(used, n)
		rep.Elapsed, rep.ElapsedS = ph.Elapsed, ph.ElapsedS
		rep.Ideal = rep.Start + longest
		rep.StartS, rep.IdealS = rep.Start.Seconds(), rep.Ideal.Seconds()
		rep.CPUPerTask, rep.CPUPerTaskUS, rep.Cores = ph.CPUPerTask, ph.CPUPerTaskUS, ph.Cores
		rep.Peak = sim.MaxConcurrent()
		peak.mu.Lock()
		rep.HeapPeakKiB = perAgentKiB(peak.heap, heap0, n)
		rep.GoroutinesPerAgent = (float64(peak.goroutines) - float64(g0)) / float64(n)
		peak.mu.Unlock()
		rep.RoleGap, rep.SubmitToStart = obs.dists()
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}
