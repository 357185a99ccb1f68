// Package consumers holds Drover's task consumer: one durable pull consumer
// per queue shared by every worker, fetched only for free pool slots, with
// the ack policy (ack, nak with delay, term, in-progress heartbeats) applied
// to what the pipeline decides.
package consumers

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/pool"
)

// Handler runs one delivery; *pipeline.Pipeline implements it.
type Handler interface {
	Handle(ctx context.Context, d pipeline.Delivery) pipeline.Outcome
}

// Config holds a task consumer's settings. Zero fields take the defaults.
type Config struct {
	// Queue is the queue consumed (required).
	Queue string
	// AckWait is the consumer's ack wait; heartbeats go at a third of it
	// (default 30s).
	AckWait time.Duration
	// Grace is how long a stopping consumer lets in-flight tasks finish
	// before cancelling them and handing them back (default 30s).
	Grace time.Duration
	// FetchWait is how long one fetch waits for messages (default 5s).
	FetchWait time.Duration
	// Watchdog is how often the watchdog looks for a stalled queue
	// (default 30s; negative disables it).
	Watchdog time.Duration
	// Metrics receives the consumer's events (nil: none recorded).
	Metrics Metrics
}

func (c Config) withDefaults() Config {
	if c.AckWait <= 0 {
		c.AckWait = 30 * time.Second
	}
	if c.Grace <= 0 {
		c.Grace = 30 * time.Second
	}
	if c.FetchWait <= 0 {
		c.FetchWait = 5 * time.Second
	}
	if c.Watchdog == 0 {
		c.Watchdog = 30 * time.Second
	}
	if c.Metrics == nil {
		c.Metrics = nopMetrics{}
	}
	return c
}

// Ensure returns the queue's consumer, creating it when missing. The task
// consumer calls it again when its consumer disappears.
type Ensure func(ctx context.Context) (jetstream.Consumer, error)

// TaskConsumer feeds one queue's tasks to a handler through a pool.
type TaskConsumer struct {
	cfg    Config
	ensure Ensure
	pool   *pool.Pool
	h      Handler
	log    *slog.Logger

	cons     atomic.Pointer[jetstream.Consumer]
	fetching atomic.Bool
	stats    Stats
	// tasks counts this consumer's own tasks: the pool may be shared
	// with other queues', which this consumer must neither wait for nor
	// race with. Only Run's goroutine adds to it.
	tasks sync.WaitGroup
}

// New returns a TaskConsumer. The pool bounds how many tasks run at once;
// several consumers (queues) of a worker may share one pool.
func New(cfg Config, ensure Ensure, p *pool.Pool, h Handler, log *slog.Logger) *TaskConsumer {
	if log == nil {
		log = slog.Default()
	}
	return &TaskConsumer{cfg: cfg.withDefaults(), ensure: ensure, pool: p, h: h, log: log.With("queue", cfg.Queue)}
}

// Fetching reports whether the consume loop is running and fetching.
func (c *TaskConsumer) Fetching() bool { return c.fetching.Load() }

// Run fetches and handles tasks until ctx is done (the soft stop), then
// lets in-flight tasks finish within the grace period; what is left is
// cancelled, which hands each task back with a nak at once. It returns when
// every task it started has returned.
func (c *TaskConsumer) Run(ctx context.Context) error {
	cons, err := c.ensure(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: nothing to drain
		}
		return err
	}
	c.cons.Store(&cons)
	c.cfg.Metrics.PoolSize(c.pool.Size())
	workCtx, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()

	wdCtx, stopWatchdog := context.WithCancel(ctx)
	wdDone := make(chan struct{})
	go func() { defer close(wdDone); c.watchdog(wdCtx, c.cfg.Watchdog) }()
	c.fetching.Store(true)
	c.fetchLoop(ctx, workCtx)
	c.fetching.Store(false)
	stopWatchdog()
	<-wdDone

	graceCtx, cancel := context.WithTimeout(context.Background(), c.cfg.Grace)
	defer cancel()
	drained := make(chan struct{})
	go func() { c.tasks.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-graceCtx.Done():
		c.log.Warn("grace period over; handing back the tasks still running", "in_flight", c.pool.Stats().InFlight)
		cancelWork()
		<-drained
	}
	return nil
}

func (c *TaskConsumer) fetchLoop(ctx, workCtx context.Context) {
	failures := 0
	for ctx.Err() == nil {
		n, err := c.pool.AcquireFree(ctx)
		if err != nil {
			return
		}
		got, err := c.fetch(ctx, workCtx, n)
		for range n - got {
			c.pool.Release()
		}
		if err == nil {
			failures = 0
			continue
		}
		failures++
		c.log.Warn("fetch failed", "err", err, "failures", failures)
		if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrStreamNotFound) {
			if cons, eerr := c.ensure(ctx); eerr == nil {
				c.cons.Store(&cons)
				c.log.Info("consumer recreated")
				continue
			} else {
				c.log.Warn("could not recreate the consumer", "err", eerr)
			}
		}
		wait(ctx, min(time.Duration(failures)*250*time.Millisecond, 5*time.Second))
	}
}

// fetch asks for n messages (n free slots are taken) and starts each one it
// gets on its slot. It returns how many slots it used.
func (c *TaskConsumer) fetch(ctx, workCtx context.Context, n int) (int, error) {
	fctx, cancel := context.WithTimeout(ctx, c.cfg.FetchWait)
	defer cancel()
	batch, err := (*c.cons.Load()).Fetch(n, jetstream.FetchContext(fctx))
	if err != nil {
		return 0, err
	}
	got := 0
	for msg := range batch.Messages() {
		if ctx.Err() != nil {
			// Stopping: hand it back at once rather than start it.
			_ = msg.Nak()
			c.cfg.Metrics.Settled(pipeline.Nak.String())
			continue
		}
		got++
		c.stats.Fetched.Add(1)
		c.tasks.Add(1)
		c.pool.Go(func() { defer c.tasks.Done(); c.handle(workCtx, msg) })
	}
	if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return got, err
	}
	return got, nil
}

// wait blocks for d or until ctx is done.
func wait(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
