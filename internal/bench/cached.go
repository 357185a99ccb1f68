package bench

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Cached is what the cached phase measured: CachedTasks unchanged tasks
// run twice through the wire contract, the second run all cache hits.
type Cached struct {
	Tasks int    `json:"tasks"`
	Sync  string `json:"sync"`
	// Cold and Warm are the first and the second run, each timed from the
	// first submit to the last terminal event read from the audit stream
	// by a follower outside the worker.
	Cold Phase `json:"cold"`
	Warm Phase `json:"warm"`
	// Hits and Misses count the second run's role cache lookups.
	Hits   int64 `json:"hits"`
	Misses int64 `json:"misses"`
	// Writes counts the second run's stored writes.
	Writes Writes `json:"writes"`
	// Ops is the cached contract-ops phase with as many tasks: the
	// contract's operations for a fully cached task, none of Drover's
	// code (runOpsCached), timed from the first submit to the last ack.
	Ops Phase `json:"contract_ops"`
	// Disk is the embedded store's fsync probe, with fsync before ack
	// (nil otherwise, or against an external server).
	Disk *Disk `json:"disk,omitempty"`
}

// hitCounter counts role cache hits and runner calls; the rest of
// pipeline.Metrics it ignores.
type hitCounter struct{ hits, misses atomic.Int64 }

var _ pipeline.Metrics = (*hitCounter)(nil)

func (h *hitCounter) RoleDone(_ subjects.Role, _ string, cached bool, _ time.Duration, _ error) {
	if cached {
		h.hits.Add(1)
	} else {
		h.misses.Add(1)
	}
}
func (*hitCounter) TaskDone(subjects.EventType)  {}
func (*hitCounter) CachePutFailed()              {}
func (*hitCounter) AuditPublished(time.Duration) {}
func (*hitCounter) DLQWritten(subjects.Reason)   {}

// runCached runs the cached phase: CachedTasks tasks with fixed IDs and
// scopes, submitted as a producer would (requests on the task subject),
// their ends followed in the audit stream; then the same tasks again under
// a new workflow, which find every role's result in the cache.
func runCached(ctx context.Context, cfg Config, url string) (*Cached, error) {
	n := cfg.CachedTasks
	rep := &Cached{Tasks: n, Sync: SyncLabel(cfg.Sync)}
	if cfg.URL != "" {
		rep.Sync = "the server's own"
	}
	err := withOwn(ctx, cfg, url, func(o own) error {
		ctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout, errTimeout)
		defer cancel()
		var hc hitCounter
		stop, err := startWorker(ctx, cfg, o.ncW, o.settings, &hc, pipeline.Config{}, runner.Set{})
		if err != nil {
			return err
		}
		err = func() error {
			base := fmt.Sprintf("%scached%d", workflowPrefix, time.Now().UnixNano())
			scope := func(i int) string { return fmt.Sprintf("bench %s task %d", base, i) } // the same in both runs
			if rep.Cold, err = followRun(ctx, cfg, o.js, base+"-1", n, scope); err != nil {
				return err
			}
			hc.hits.Store(0)
			hc.misses.Store(0)
			streams := writeStreams(cfg.Names)
			before, err := lastSeqs(ctx, o.js, streams)
			if err != nil {
				return err
			}
			if rep.Warm, err = followRun(ctx, cfg, o.js, base+"-2", n, scope); err != nil {
				return err
			}
			after, err := lastSeqs(ctx, o.js, streams)
			if err != nil {
				return err
			}
			rep.Writes = countWrites(streams, before, after, n)
			rep.Hits, rep.Misses = hc.hits.Load(), hc.misses.Load()
			return nil
		}()
		if serr := stop(); serr != nil && err == nil {
			err = serr
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	opsCfg := cfg
	opsCfg.Tasks = n
	if rep.Ops, err = runOpsCached(ctx, opsCfg, url); err != nil {
		return nil, err
	}
	return rep, nil
}

// followRun submits n tasks of workflow wf and times each to its terminal
// event as a follower of the audit stream sees it.
func followRun(ctx context.Context, cfg Config, js jetstream.JetStream, wf string, n int, scope func(int) string) (Phase, error) {
	after, err := producer.AuditLastSeq(ctx, js, cfg.Names)
	if err != nil {
		return Phase{}, fmt.Errorf("bench: %w", err)
	}
	submit, end := make([]time.Time, n), make([]time.Time, n)
	collectHeap()
	if err := submitTasks(ctx, cfg, js, submit, benchRequests(wf, scope)); err != nil {
		return Phase{}, err
	}
	found, failed := 0, 0
	err = producer.FollowTerminal(ctx, js, cfg.Names, wf, after, func(t producer.Terminal) bool {
		if i, ok := taskIndex(t.Event.TaskID, n); ok && end[i].IsZero() {
			end[i] = time.Now()
			found++
			if t.Event.EventType != subjects.EventTaskCompleted {
				failed++
			}
		}
		return found < n
	})
	if err != nil {
		if errors.Is(context.Cause(ctx), errTimeout) {
			err = fmt.Errorf("%w after %s with %d of %d tasks ended (raise --timeout)", errTimeout, cfg.Timeout, found, n)
		}
		return Phase{}, fmt.Errorf("bench: cached phase %s: %w", wf, err)
	}
	ph := newPhase(submit, end)
	ph.Completed, ph.Failed = n-failed, failed
	return ph, nil
}
