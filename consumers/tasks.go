// Package consumers holds Drover's task consumer: one durable pull consumer
// per queue shared by every worker, fetched only for free pool slots, with
// the ack policy (ack, nak with delay, term, in-progress heartbeats) applied
// to what its Handler decides, and a panic boundary around each message.
//
// Everything it exports is its own or the wire contract's (package
// subjects): a program can run tasks through it without Drover's internal
// packages. Its Handler is the seam: Drover's pipeline implements it with
// these very types (Msg, Outcome, Action, ErrClaimLost).
package consumers

import (
	"context"
	"errors"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/backoff"
	"github.com/droverhq/drover/subjects"
)

// Config holds a task consumer's settings. Zero fields take the defaults.
type Config struct {
	// Queue is the queue consumed (required).
	Queue string
	// AckWait is used only when the consumer's own ack wait cannot be read
	// (default 30s). Heartbeats go at a third of the consumer's actual ack
	// wait, whatever this worker's flags say.
	AckWait time.Duration
	// MaxDeliver is the workers' delivery limit used only when the
	// consumer has none (default 5); otherwise it is the consumer's max
	// deliver less one.
	MaxDeliver int
	// Grace is how long a stopping consumer lets in-flight tasks finish
	// before cancelling them and handing them back (default 30s).
	Grace time.Duration
	// FetchWait is how long one fetch waits for messages (default 5s).
	FetchWait time.Duration
	// Watchdog is how often the watchdog reads the consumer's state: it
	// follows changes of its settings and looks for a stalled queue
	// (default 30s; negative disables it).
	Watchdog time.Duration
	// RetryBase is the nak delay after a handler panicked, doubled per
	// delivery up to RetryMax (defaults 1s and 1m).
	RetryBase, RetryMax time.Duration
	// Names names the DLQ a request is copied to when its handling
	// panicked through every delivery and the handler could not fail it.
	Names subjects.Names
	// HoldPoll is how often a held consumer asks Deps.Hold again
	// (default 500ms).
	HoldPoll time.Duration
}

// Deps are what a task consumer works with.
type Deps struct {
	// JetStream is the connection the consumer pulls on, and copies a
	// request to the DLQ with (required to Run).
	JetStream jetstream.JetStream
	// Ensure returns the queue's consumer, creating it when missing
	// (required to Run).
	Ensure Ensure
	// Pool bounds how many tasks run at once; several consumers (queues)
	// of a worker may share one (required).
	Pool *Pool
	// Handler decides what becomes of each message (required).
	Handler Handler
	// Metrics receives the consumer's events (nil: none recorded).
	Metrics Metrics
	// Hold, when set, is asked before each fetch: while it returns an
	// error (a dependency the tasks need is down), the consumer fetches
	// nothing and asks again every Config.HoldPoll. Tasks already running
	// are not touched. It must be cheap (cached).
	Hold func() error
	// Log is the consumer's logger (nil: slog.Default()).
	Log *slog.Logger
}

func (c Config) withDefaults() Config {
	if c.AckWait <= 0 {
		c.AckWait = 30 * time.Second
	}
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 5
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
	if c.RetryBase <= 0 {
		c.RetryBase = time.Second
	}
	if c.RetryMax <= 0 {
		c.RetryMax = time.Minute
	}
	if c.HoldPoll <= 0 {
		c.HoldPoll = 500 * time.Millisecond
	}
	return c
}

// Ensure returns the queue's consumer, creating it when missing. The task
// consumer calls it again when its consumer disappears.
type Ensure func(ctx context.Context) (jetstream.Consumer, error)

// Settings are the consumer's settings this task consumer runs with: the
// consumer's own, read from the server, which win over the worker's flags.
type Settings struct {
	AckWait time.Duration
	// MaxDeliver is the workers' delivery limit: the consumer's max
	// deliver less one.
	MaxDeliver    int
	MaxAckPending int
}

// HeartbeatInterval is how often a running task's claim is renewed: a
// third of the ack wait.
func (s Settings) HeartbeatInterval() time.Duration { return s.AckWait / 3 }

// settingsOf reads the settings of a consumer's configuration; what it
// lacks comes from cfg.
func settingsOf(cc jetstream.ConsumerConfig, cfg Config) Settings {
	s := Settings{AckWait: cc.AckWait, MaxDeliver: cc.MaxDeliver - 1, MaxAckPending: cc.MaxAckPending}
	if s.AckWait <= 0 {
		s.AckWait = cfg.AckWait
	}
	switch {
	case cc.MaxDeliver == 1: // no redelivery at all: the first is the last
		s.MaxDeliver = 1
	case cc.MaxDeliver <= 0: // unlimited
		s.MaxDeliver = cfg.MaxDeliver
	}
	return s
}

// TaskConsumer feeds one queue's tasks to a handler through a pool.
type TaskConsumer struct {
	cfg  Config
	deps Deps
	log  *slog.Logger

	cons     atomic.Pointer[jetstream.Consumer]
	settings atomic.Pointer[Settings]
	fetching atomic.Bool
	stats    counters
	// tasks counts this consumer's own tasks: the pool may be shared
	// with other queues', which this consumer must neither wait for nor
	// race with. Only Run's goroutine adds to it.
	tasks sync.WaitGroup
}

// New returns a TaskConsumer of cfg.Queue, or an error naming what is
// missing.
func New(deps Deps, cfg Config) (*TaskConsumer, error) {
	switch {
	case cfg.Queue == "":
		return nil, errors.New("consumers: Config.Queue is required")
	case deps.Pool == nil:
		return nil, errors.New("consumers: Deps.Pool is required")
	case deps.Handler == nil:
		return nil, errors.New("consumers: Deps.Handler is required")
	}
	if deps.Metrics == nil {
		deps.Metrics = nopMetrics{}
	}
	if deps.Log == nil {
		deps.Log = slog.Default()
	}
	c := &TaskConsumer{cfg: cfg.withDefaults(), deps: deps, log: deps.Log.With("queue", cfg.Queue)}
	s := settingsOf(jetstream.ConsumerConfig{}, c.cfg)
	c.settings.Store(&s)
	return c, nil
}

// Fetching reports whether the consume loop is running and fetching.
func (c *TaskConsumer) Fetching() bool { return c.fetching.Load() }

// Settings returns the consumer settings this task consumer runs with.
func (c *TaskConsumer) Settings() Settings { return *c.settings.Load() }

// use makes cons the consumer fetched from and follows its settings.
func (c *TaskConsumer) use(cons jetstream.Consumer) {
	c.cons.Store(&cons)
	if info := cons.CachedInfo(); info != nil {
		c.follow(info.Config)
	}
}

// follow runs with the settings of the consumer's configuration cc.
func (c *TaskConsumer) follow(cc jetstream.ConsumerConfig) {
	s := settingsOf(cc, c.cfg)
	if old := c.settings.Swap(&s); *old != s {
		c.log.Info("running with the consumer's settings", "ack_wait", s.AckWait, "heartbeat", s.HeartbeatInterval(),
			"max_deliver", s.MaxDeliver, "max_ack_pending", s.MaxAckPending)
	}
}

// Run fetches and handles tasks until ctx is done (the soft stop), then
// lets in-flight tasks finish within the grace period; what is left is
// cancelled, which hands each task back with a nak at once. It returns when
// every task it started has returned.
func (c *TaskConsumer) Run(ctx context.Context) error {
	if c.deps.JetStream == nil {
		return errors.New("consumers: no JetStream connection to pull on (Config.JetStream)")
	}
	cons, err := c.deps.Ensure(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return nil // stopped before it started: nothing to drain
		}
		return err
	}
	c.use(cons)
	c.deps.Metrics.PoolSize(c.deps.Pool.Size())
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
		c.log.Warn("grace period over; handing back the tasks still running", "in_flight", c.deps.Pool.Stats().InFlight)
		cancelWork()
		<-drained
	}
	return nil
}

// fetchLoop reserves slots and fetches for them until ctx is done. A queue
// whose last fetch got messages asks for slots as hungry, which makes an
// idle queue's pending fetch give its slots back.
func (c *TaskConsumer) fetchLoop(ctx, workCtx context.Context) {
	failures := 0
	hungry := true
	held := false
	for ctx.Err() == nil {
		if c.deps.Hold != nil {
			if err := c.deps.Hold(); err != nil {
				if !held {
					c.log.Warn("not fetching while a dependency is down", "err", err)
				}
				held = true
				_ = backoff.Sleep(ctx, c.cfg.HoldPoll)
				continue
			}
			if held {
				c.log.Info("fetching again")
			}
			held = false
		}
		n, err := c.deps.Pool.reserve(ctx, hungry)
		if err != nil {
			return
		}
		got, err := c.fetch(ctx, workCtx, n)
		for range n - got {
			c.deps.Pool.Release()
		}
		hungry = got > 0
		if err == nil {
			failures = 0
			continue
		}
		failures++
		c.log.Warn("fetch failed", "err", err, "failures", failures)
		if errors.Is(err, jetstream.ErrConsumerNotFound) || errors.Is(err, jetstream.ErrConsumerDeleted) || errors.Is(err, jetstream.ErrStreamNotFound) {
			if cons, eerr := c.deps.Ensure(ctx); eerr == nil {
				c.use(cons)
				c.log.Info("consumer recreated")
				continue
			} else {
				c.log.Warn("could not recreate the consumer", "err", eerr)
			}
		}
		_ = backoff.Sleep(ctx, min(time.Duration(failures)*250*time.Millisecond, 5*time.Second))
	}
}

// fetch asks for n messages (n slots are reserved) and starts each one it
// gets on its slot. It returns how many slots it used. When another queue
// with work waits for slots it only takes what is there now; otherwise it
// waits up to FetchWait, and gives up waiting as soon as such a queue
// appears, so an idle queue never keeps slots from a busy one. Giving up
// loses nothing: a message the server sent before it saw the pull end
// still arrives, and runs on its reserved slot (or, when the consumer is
// stopping, is handed back at once).
func (c *TaskConsumer) fetch(ctx, workCtx context.Context, n int) (int, error) {
	cons := *c.cons.Load()
	info := cons.CachedInfo()
	if info == nil {
		return 0, errors.New("consumers: the consumer's stream and name are unknown")
	}
	wait := c.cfg.FetchWait
	if c.deps.Pool.contended() {
		wait = 0
	}
	p, err := startPull(c.deps.JetStream.Conn(), nextSubject(c.deps.JetStream, info.Stream, info.Name), n, wait)
	if err != nil {
		return 0, err
	}
	// The server ends the request before wait; this bounds a request whose
	// end never comes (a lost connection), as the library's Fetch does, and
	// then its drain.
	guard := time.NewTimer(wait + time.Second)
	defer guard.Stop()
	want, stop := c.deps.Pool.wanted(), ctx.Done()
	got := 0
	start := func(msg *nats.Msg) {
		m := pulled{msg}
		if ctx.Err() != nil || got == n {
			// Stopping: hand it back at once rather than start it.
			_ = m.Nak()
			c.deps.Metrics.Settled(Nak.String())
			return
		}
		got++
		c.stats.fetched.Add(1)
		c.tasks.Add(1)
		c.deps.Pool.Go(func() { defer c.tasks.Done(); c.handle(workCtx, m) })
	}
	// end ends the pull early and gives its drain drainWait; false: it had
	// ended already.
	end := func() bool {
		if !p.stop() {
			return false
		}
		guard.Reset(drainWait)
		return true
	}
	for {
		select {
		case msg := <-p.msgs:
			start(msg)
			continue
		case <-p.ended:
		case <-want:
			want = nil
			end()
			continue
		case <-stop:
			stop = nil
			end()
			continue
		case <-guard.C:
			if end() {
				continue
			}
			// Ended, its drain unfinished: the connection is gone, and
			// nothing more will come.
			p.abandon()
		}
		break
	}
	for { // what arrived before the subscription closed
		select {
		case msg := <-p.msgs:
			start(msg)
			continue
		default:
		}
		break
	}
	return got, p.error()
}
