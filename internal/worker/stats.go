package worker

import (
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/status"
	"github.com/droverhq/drover/subjects"
)

// counts keeps the worker's own task and cache counters for its status
// endpoint and forwards every event to the configured metrics.
type counts struct {
	next                                   pipeline.Metrics
	completed, failed, rejected, cancelled atomic.Int64
	hits, misses                           atomic.Int64
}

var _ pipeline.Metrics = (*counts)(nil)

func (c *counts) RoleDone(role subjects.Role, runner string, cached bool, d time.Duration, err error) {
	if cached {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
	if c.next != nil {
		c.next.RoleDone(role, runner, cached, d, err)
	}
}

func (c *counts) TaskDone(outcome subjects.EventType) {
	switch outcome {
	case subjects.EventTaskCompleted:
		c.completed.Add(1)
	case subjects.EventTaskFailed:
		c.failed.Add(1)
	case subjects.EventTaskRejected:
		c.rejected.Add(1)
	case subjects.EventTaskCancelled:
		c.cancelled.Add(1)
	}
	if c.next != nil {
		c.next.TaskDone(outcome)
	}
}

func (c *counts) CachePutFailed() {
	if c.next != nil {
		c.next.CachePutFailed()
	}
}

// LiveLine implements pipeline.LiveMetrics, forwarding to the configured
// metrics when they count live lines.
func (c *counts) LiveLine(published bool) {
	if lm, ok := c.next.(pipeline.LiveMetrics); ok {
		lm.LiveLine(published)
	}
}

func (c *counts) AuditPublished(d time.Duration) {
	if c.next != nil {
		c.next.AuditPublished(d)
	}
}

func (c *counts) DLQWritten(reason subjects.Reason) {
	if c.next != nil {
		c.next.DLQWritten(reason)
	}
}

func (c *counts) RoleGap(role subjects.Role, gap time.Duration) {
	if c.next != nil {
		c.next.RoleGap(role, gap)
	}
}

func (c *counts) SubmitToStart(d time.Duration) {
	if c.next != nil {
		c.next.SubmitToStart(d)
	}
}

// Status is what the worker's status endpoint answers: who it is, its pool,
// and the tasks it ended and cache lookups it made since it started.
func (w *Worker) Status() status.WorkerStatus {
	st := status.WorkerStatus{
		WorkerID:    w.id,
		Host:        w.host,
		Version:     w.cfg.Version,
		Concurrency: w.cfg.Concurrency,
		InFlight:    w.pool.Stats().InFlight,
		State:       "running",
		Tasks: status.TaskCounts{
			Completed: w.counts.completed.Load(),
			Failed:    w.counts.failed.Load(),
			Rejected:  w.counts.rejected.Load(),
			Cancelled: w.counts.cancelled.Load(),
		},
		Cache:    status.CacheCounts{Hits: w.counts.hits.Load(), Misses: w.counts.misses.Load()},
		Queues:   append([]string(nil), w.cfg.Queues...),
		Warnings: w.ReadyNotes(),
	}
	if p := w.startedAt.Load(); p != nil {
		st.Started = *p
		st.UptimeS = time.Since(*p).Seconds()
	}
	if w.phase.Load() >= phaseDraining {
		st.State = "draining"
	}
	if m := w.ws.Load(); m != nil {
		ws := m.Stats()
		st.Workspaces = &status.WorkspaceCounts{Worktrees: ws.Worktrees, Open: ws.Open, Kept: ws.Kept, DiskBytes: ws.DiskBytes,
			Fetches: ws.Fetches, Pushes: ws.Pushes, PushedRefs: ws.PushedRefs, PushRetries: ws.PushRetries}
	}
	return st
}
