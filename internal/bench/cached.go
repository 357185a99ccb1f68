package bench

import (
	"context"
	"fmt"
	"time"

	"github.com/droverhq/drover/internal/runner"
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
	// Disk is the embedded store's fsync probe, with fsync before ack
	// (nil otherwise, or against an external server).
	Disk *Disk `json:"disk,omitempty"`
}

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
		var obs observed
		stop, err := startWorker(ctx, cfg, o.ncW, o.settings, &obs, runner.Set{})
		if err != nil {
			return err
		}
		err = func() error {
			base := fmt.Sprintf("%scached%d", workflowPrefix, time.Now().UnixNano())
			scope := func(i int) string { return fmt.Sprintf("bench %s task %d", base, i) } // the same in both runs
			if rep.Cold, err = timeRun(ctx, cfg, o.js, "cached phase", n, benchRequests(base+"-1", scope)); err != nil {
				return err
			}
			obs.reset()
			streams := writeStreams(cfg.Names)
			before, err := LastSeqs(ctx, o.js, streams)
			if err != nil {
				return err
			}
			if rep.Warm, err = timeRun(ctx, cfg, o.js, "cached phase", n, benchRequests(base+"-2", scope)); err != nil {
				return err
			}
			after, err := LastSeqs(ctx, o.js, streams)
			if err != nil {
				return err
			}
			rep.Writes = countWrites(streams, before, after, n)
			obs.mu.Lock()
			rep.Hits, rep.Misses = obs.hits, obs.misses
			obs.mu.Unlock()
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
	return rep, nil
}
