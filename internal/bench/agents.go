package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"runtime"
	"runtime/metrics"
	"time"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Agents is what the agents phase measured: how many agents one worker
// drives at once, and what each costs it. Agents cold one-round tasks are
// submitted together to a worker with a pool slot for each; every role's
// sim runner waits a latency of its own, spread evenly over
// [AgentLatency/2, 3*AgentLatency/2] across the tasks, as the agents of a
// fleet each take their own time. The memory is measured when every agent
// is waiting at once.
type Agents struct {
	Agents int `json:"agents"`
	// Latency is the mean wait of a role's runner.
	Latency   time.Duration `json:"-"`
	LatencyMS float64       `json:"role_latency_ms"`
	Completed int           `json:"completed"`
	Failed    int           `json:"failed"`
	// Elapsed runs from the first submit to the last terminal event;
	// Ideal is the longest task's three waits, what a worker that cost
	// nothing would take.
	Elapsed  time.Duration `json:"-"`
	Ideal    time.Duration `json:"-"`
	ElapsedS float64       `json:"elapsed_s"`
	IdealS   float64       `json:"ideal_s"`
	// Peak is the most runner calls waiting at once.
	Peak int64 `json:"peak"`
	// AllWaiting says the agents were all waiting at once, when the heap
	// and goroutines were counted; without it those fields are zero.
	AllWaiting bool `json:"all_waiting"`
	// HeapPerAgent is the growth of the live heap, from the idle worker
	// to every agent waiting, per agent; GoroutinesPerAgent likewise. Both
	// are the whole process's, the embedded server's included (the
	// requests in its stores, the deliveries).
	HeapPerAgentKiB    float64 `json:"heap_per_agent_kib"`
	GoroutinesPerAgent float64 `json:"goroutines_per_agent"`
	// CPUPerTask and Cores are the process's, as for the other phases.
	CPUPerTask   time.Duration `json:"-"`
	CPUPerTaskUS float64       `json:"cpu_per_task_us"`
	Cores        float64       `json:"cores"`
	// RoleGap and SubmitToStart are the pipeline's observations, as in
	// the latency phase, with every agent of the fleet in flight.
	RoleGap       Dist `json:"role_gap"`
	SubmitToStart Dist `json:"submit_to_start"`
}

// agentLatency is task i's wait per role, of n tasks with mean mean:
// spread evenly over [mean/2, 3*mean/2], in milliseconds.
func agentLatency(i, n int, mean time.Duration) int {
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
		wait := agentLatency(i, n, mean)
		ctl, _ := json.Marshal(subjects.SimControls{LatencyMS: map[subjects.Role]int{
			subjects.RolePlanner: wait, subjects.RoleImplementer: wait, subjects.RoleJudge: wait}})
		req.Metadata = map[string]json.RawMessage{"sim": ctl}
		return req
	}
}

// The runtime's live heap (as of the last collection) and goroutine count.
const (
	liveHeapMetric   = "/gc/heap/live:bytes"
	goroutinesMetric = "/sched/goroutines:goroutines"
)

// footprint collects the heap and reads the live heap and the goroutines.
func footprint() (heap, goroutines uint64) {
	runtime.GC()
	s := []metrics.Sample{{Name: liveHeapMetric}, {Name: goroutinesMetric}}
	metrics.Read(s)
	for i, dst := range []*uint64{&heap, &goroutines} {
		if s[i].Value.Kind() == metrics.KindUint64 {
			*dst = s[i].Value.Uint64()
		}
	}
	return heap, goroutines
}

// agentsPoll is how often the agents phase looks at the runner calls in
// flight.
const agentsPoll = 5 * time.Millisecond

// runAgents runs the agents phase.
func runAgents(ctx context.Context, cfg Config, url string) (*Agents, error) {
	n := cfg.Agents
	rep := &Agents{Agents: n, Latency: cfg.AgentLatency, LatencyMS: ms(cfg.AgentLatency)}
	for i := range n {
		rep.Ideal = max(rep.Ideal, 3*time.Duration(agentLatency(i, n, cfg.AgentLatency))*time.Millisecond)
	}
	rep.IdealS = rep.Ideal.Seconds()
	wcfg := cfg
	wcfg.Concurrency = n
	err := withOwn(ctx, cfg, url, func(o own) error {
		ctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout, errTimeout)
		defer cancel()
		tr := newTerminals(newWorkflowID(), n)
		var lt latencyTimes
		sim := runner.NewSim(runner.SimOptions{})
		stop, err := startWorker(ctx, wcfg, o.ncW, o.settings, nil, pipeline.Config{
			OnRoleGap: lt.gap, OnSubmitToStart: lt.start, OnTerminal: tr.record,
		}, sim)
		if err != nil {
			return err
		}
		collectHeap()
		heap0, g0 := footprint()
		submit := make([]time.Time, n)
		use := measure()

		// The watcher counts the heap and goroutines once every agent is
		// waiting; it ends then, or with the phase.
		var (
			heap1, g1 uint64
			all       bool
		)
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
				}
				if sim.InFlight() >= int64(n) {
					heap1, g1 = footprint()
					all = true
					return
				}
			}
		}()
		err = submitTasks(ctx, cfg, o.js, submit, agentRequests(tr.wf, n, cfg.AgentLatency))
		if err == nil {
			select {
			case <-tr.all:
			case <-ctx.Done():
				tr.mu.Lock()
				err = fmt.Errorf("bench: agents phase, with %d of %d tasks ended: %w", tr.completed+tr.failed, n, context.Cause(ctx))
				tr.mu.Unlock()
			}
		}
		used := use.since()
		close(phaseDone)
		<-watched
		if serr := stop(); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		tr.mu.Lock()
		ph := newPhase(submit, tr.end)
		rep.Completed, rep.Failed = tr.completed, tr.failed
		tr.mu.Unlock()
		ph.setUsage(used, n)
		rep.Elapsed, rep.ElapsedS = ph.Elapsed, ph.ElapsedS
		rep.CPUPerTask, rep.CPUPerTaskUS, rep.Cores = ph.CPUPerTask, ph.CPUPerTaskUS, ph.Cores
		rep.Peak, rep.AllWaiting = sim.MaxConcurrent(), all
		if all && n > 0 {
			rep.HeapPerAgentKiB = (float64(heap1) - float64(heap0)) / 1024 / float64(n)
			rep.GoroutinesPerAgent = (float64(g1) - float64(g0)) / float64(n)
		}
		lt.mu.Lock()
		defer lt.mu.Unlock()
		rep.RoleGap, rep.SubmitToStart = newDist(lt.gaps), newDist(lt.starts)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}
