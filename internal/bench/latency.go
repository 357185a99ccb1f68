package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Dist is a distribution of durations.
type Dist struct {
	N     int           `json:"n"`
	P50   time.Duration `json:"-"`
	P99   time.Duration `json:"-"`
	Max   time.Duration `json:"-"`
	P50MS float64       `json:"p50_ms"`
	P99MS float64       `json:"p99_ms"`
	MaxMS float64       `json:"max_ms"`
}

func newDist(d []time.Duration) Dist {
	d = slices.Clone(d)
	slices.Sort(d)
	out := Dist{N: len(d), P50: percentile(d, 50), P99: percentile(d, 99)}
	if len(d) > 0 {
		out.Max = d[len(d)-1]
	}
	out.P50MS, out.P99MS, out.MaxMS = ms(out.P50), ms(out.P99), ms(out.Max)
	return out
}

// Latency is what the latency phase measured: the overhead a user feels on
// an idle worker, the runners taking no time.
type Latency struct {
	Tasks int    `json:"tasks"`
	Sync  string `json:"sync"`
	// RoleGap runs from one role's runner returning to the next role's
	// runner starting (pipeline.Config.OnRoleGap).
	RoleGap Dist `json:"role_gap"`
	// SubmitToStart runs from the server storing the request to the
	// planner's runner starting (pipeline.Config.OnSubmitToStart).
	SubmitToStart Dist `json:"submit_to_start"`
	// SubmitToEnd runs from the submit to the worker having the terminal
	// event stored.
	SubmitToEnd Dist `json:"submit_to_end"`
}

// latencyTimes collects the pipeline's observations.
type latencyTimes struct {
	mu           sync.Mutex
	gaps, starts []time.Duration
}

func (l *latencyTimes) gap(_ subjects.Role, d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.gaps = append(l.gaps, d)
}

func (l *latencyTimes) start(d time.Duration) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.starts = append(l.starts, d)
}

// runLatency runs the latency phase: LatencyTasks cold one-round tasks
// submitted one at a time, each once the previous one ended, so the worker
// is idle when each arrives.
func runLatency(ctx context.Context, cfg Config, url string) (*Latency, error) {
	n := cfg.LatencyTasks
	rep := &Latency{Tasks: n, Sync: SyncLabel(cfg.Sync)}
	if cfg.URL != "" {
		rep.Sync = "the server's own"
	}
	err := withOwn(ctx, cfg, url, func(o own) error {
		ctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout, errTimeout)
		defer cancel()
		wf := fmt.Sprintf("%slat%d", workflowPrefix, time.Now().UnixNano())
		ended := make(chan int, n) // never full: one terminal per task
		var lt latencyTimes
		stop, err := startWorker(ctx, cfg, o.ncW, o.settings, nil, pipeline.Config{
			OnRoleGap: lt.gap, OnSubmitToStart: lt.start,
			OnTerminal: func(w, task string, _ subjects.EventType) {
				if i, ok := taskIndex(task, n); ok && w == wf {
					select {
					case ended <- i:
					default:
					}
				}
			},
		}, runner.Set{})
		if err != nil {
			return err
		}
		total := make([]time.Duration, 0, n)
		err = func() error {
			scope := coldScope(wf)
			for i := range n {
				msg, err := producer.Msg(cfg.Names, Queue, benchRequest(wf, i, scope))
				if err != nil {
					return fmt.Errorf("bench: latency: task %d: %w", i, err)
				}
				start := time.Now()
				if _, err := o.js.PublishMsg(ctx, msg); err != nil {
					return fmt.Errorf("bench: latency: submit task %d: %w", i, err)
				}
				select {
				case got := <-ended:
					if got != i {
						return fmt.Errorf("bench: latency: task %d ended while waiting for task %d", got, i)
					}
				case <-ctx.Done():
					return fmt.Errorf("bench: latency phase: task %d: %w", i, context.Cause(ctx))
				}
				total = append(total, time.Since(start))
			}
			return nil
		}()
		if serr := stop(); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		lt.mu.Lock()
		defer lt.mu.Unlock()
		rep.RoleGap, rep.SubmitToStart, rep.SubmitToEnd = newDist(lt.gaps), newDist(lt.starts), newDist(total)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}
