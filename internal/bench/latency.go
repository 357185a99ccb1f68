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
	out := Dist{N: len(d), P50: Percentile(d, 50), P99: Percentile(d, 99)}
	if len(d) > 0 {
		out.Max = d[len(d)-1]
	}
	out.P50MS, out.P99MS, out.MaxMS = MS(out.P50), MS(out.P99), MS(out.Max)
	return out
}

// Latency is what the latency phase measured: the overhead a user feels on
// an idle worker, the runners taking no time.
type Latency struct {
	Tasks int    `json:"tasks"`
	Sync  string `json:"sync"`
	// RoleGap runs from one role's runner returning to the next role's
	// runner starting (pipeline.Metrics.RoleGap).
	RoleGap Dist `json:"role_gap"`
	// SubmitToStart runs from the server storing the request to the
	// planner's runner starting (pipeline.Metrics.SubmitToStart).
	SubmitToStart Dist `json:"submit_to_start"`
	// SubmitToEnd runs from the submit to a follower of the audit stream
	// reading the terminal event.
	SubmitToEnd Dist `json:"submit_to_end"`
}

// observed is the bench's pipeline.Metrics: it keeps the role gaps and
// submit-to-start times the pipeline observes (which drover serve exports
// as drover_role_gap_seconds and drover_submit_to_start_seconds) and counts
// role cache hits and runner calls; the rest it ignores.
type observed struct {
	mu           sync.Mutex
	gaps, starts []time.Duration
	hits, misses int64
}

var _ pipeline.Metrics = (*observed)(nil)

func (o *observed) RoleDone(_ subjects.Role, _ string, cached bool, _ time.Duration, _ error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if cached {
		o.hits++
	} else {
		o.misses++
	}
}

func (o *observed) RoleGap(_ subjects.Role, d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gaps = append(o.gaps, d)
}

func (o *observed) SubmitToStart(d time.Duration) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.starts = append(o.starts, d)
}

func (*observed) TaskDone(subjects.EventType)  {}
func (*observed) CachePutFailed()              {}
func (*observed) AuditPublished(time.Duration) {}
func (*observed) DLQWritten(subjects.Reason)   {}

// reset forgets what was observed so far.
func (o *observed) reset() {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.gaps, o.starts, o.hits, o.misses = nil, nil, 0, 0
}

// dists are the role gaps' and the submit-to-start times' distributions.
func (o *observed) dists() (gaps, starts Dist) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return newDist(o.gaps), newDist(o.starts)
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
		ctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout, ErrTimeout)
		defer cancel()
		wf := fmt.Sprintf("%slat%d", workflowPrefix, time.Now().UnixNano())
		var obs observed
		stop, err := startWorker(ctx, cfg, o.ncW, o.settings, &obs, runner.Set{})
		if err != nil {
			return err
		}
		total := make([]time.Duration, 0, n)
		err = func() error {
			after, err := producer.AuditLastSeq(ctx, o.js, cfg.Names)
			if err != nil {
				return fmt.Errorf("bench: %w", err)
			}
			f := follow(ctx, o.js, cfg.Names, wf, after, n)
			defer f.stop()
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
				case got := <-f.ended:
					if got != i {
						return fmt.Errorf("bench: latency: task %d ended while waiting for task %d", got, i)
					}
				case <-f.finished:
					return fmt.Errorf("bench: latency phase: task %d: the follower stopped: %v", i, f.err)
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
		rep.RoleGap, rep.SubmitToStart = obs.dists()
		rep.SubmitToEnd = newDist(total)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return rep, nil
}
