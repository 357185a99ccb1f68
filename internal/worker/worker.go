// Package worker wires one Drover worker: it provisions the streams and
// buckets, builds the pipeline, and runs one task consumer per queue on a
// shared pool until its context ends, then drains.
package worker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/blobs"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/internal/forge"
	"github.com/droverhq/drover/internal/lessons"
	"github.com/droverhq/drover/internal/mergequeue"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/review"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/internal/workflow"
	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// Config is a worker's configuration. Zero fields take the defaults noted.
type Config struct {
	Names  subjects.Names // default prefix "drover"
	Queues []string       // default ["default"]
	// Concurrency is the pool size: tasks run at once (default 16).
	Concurrency int
	// Consumer holds the worker's flags for its queues' consumers (ack wait
	// 30s, max deliver 5, max ack pending 1000). An existing consumer's
	// settings win unless Consumer.Reconcile is set; the task consumers
	// and the pipeline run with the consumer's actual ones.
	Consumer  broker.ConsumerSettings
	Streams   broker.Settings  // duplicate window 2m, cache TTL 24h, replicas 1
	Grace     time.Duration    // default 30s
	FetchWait time.Duration    // default 5s
	Watchdog  time.Duration    // stalled-queue check interval, default 30s
	Pipeline  pipeline.Config  // role timeout 30m, retry 1s..1m
	Runners   runner.Set       // default: the sim runner for every role
	Lessons   pipeline.Lessons // records and recalls lessons (default: the DROVER_LESSONS stream)
	// LessonsScope is whose lessons the default Lessons recall (default
	// lessons.ScopeWorkflow: the task's own workflow's).
	LessonsScope lessons.Scope
	// CacheScope is who shares cached role results (default
	// cache.ScopeFleet: every workflow; cache.ScopeWorkflow: the workflow
	// ID is part of the key).
	CacheScope cache.Scope
	Log        *slog.Logger
	// Metrics receives the pipeline's events (nil: none). When it also
	// implements consumers.Metrics, as ops.Metrics does, the task
	// consumers report to it too.
	Metrics pipeline.Metrics
	// Version is the build version the worker reports on its micro service
	// and status endpoint (default "dev").
	Version string
	// ReadyCache is how long CheckReady reuses its JetStream check
	// (default 3s), so frequent probes do not load the server.
	ReadyCache time.Duration
	// Dependencies are services the tasks need besides NATS (the
	// workspace repository); the runners' health checks
	// (runner.HealthChecker) are added to them. While one fails the
	// worker is not ready, saying why, and fetches no task; tasks are not
	// failed for it. Each check must be cheap (cached) and bounded.
	Dependencies []Dependency
	// Tracer starts a span per task delivery and per role (nil: none).
	// The caller owns it and shuts it down after Run returns (see the
	// tracing package).
	Tracer pipeline.Tracer
	// Ledger prices role results into their events and checks budgets
	// (nil: no cost, no budgets).
	Ledger pipeline.Ledger
	// Middleware, when set, wraps the handler of every task consumer
	// (tests inject faults with it). A wrapper that should let a poisoned
	// task fail through the pipeline implements consumers.Poisoner too.
	Middleware func(consumers.Handler) consumers.Handler
	// Workspace gives each task a git worktree (off when Workspace.Repo is
	// empty). Its MaxWorktrees defaults to Concurrency, so the worker never
	// holds more worktrees than its pool has slots, plus those kept.
	Workspace workspace.Config
	// Delivery is what an approved task's branch becomes: "" or "branch"
	// (pushed when Workspace.Push), or pipeline.DeliveryMerge (the merge
	// queue of Merge.Target; needs workspaces). Merge configures the
	// queue. An explicit Deliverer wins over the merge queue's.
	Delivery pipeline.DeliveryMode
	Merge    mergequeue.Config
	// Secrets are masked, with the repository's URL credentials, in what
	// the merge check prints before it becomes an agent's feedback (the
	// runners mask their own results), and an implementer's change that
	// holds one (as is, base64 or hex) fails its task before it is
	// recorded or pushed.
	Secrets []string
	// NamedSecrets are secrets with the names a failed secret scan reports
	// (their variables); masked and scanned for like Secrets, which are
	// reported by position ("secret #2").
	NamedSecrets []redact.Secret
	// PullRequests, when set, is the Deliverer (delivery pull_request):
	// each pushed branch gets its pull request opened, or updated when the
	// task is delivered again. It needs Workspace with Push on, and no
	// Deliverer.
	PullRequests *forge.Client
	// Deliverer delivers approved tasks (nil: delivery "branch", see
	// pipeline.Deliverer).
	Deliverer pipeline.Deliverer
	// Sandbox contains the processes that run agent-controlled code: the
	// worker gives it to the workspaces (setup, cleanup, the merge check);
	// the exec runners get it where they are built. When the worker runs
	// agents (workspaces on, or ExecRunners) Run checks it first and
	// refuses to start where bubblewrap cannot run; with mode none it
	// logs a warning and notes it in the readiness report (ReadyNotes).
	// nil: uncontained, unchecked and unnoted (tests).
	Sandbox *sandbox.Sandbox
	// ExecRunners says a role runs on the exec runner: agent processes
	// run even without workspaces.
	ExecRunners bool
}

// Worker is a running (or runnable) worker.
type Worker struct {
	cfg       Config
	nc        *nats.Conn
	js        jetstream.JetStream
	pool      *consumers.Pool
	res       *broker.Resources
	consumers []*consumers.TaskConsumer
	started   chan struct{}
	id, host  string
	counts    *counts

	gate      atomic.Pointer[workflow.Gate] // set once it has loaded
	phase     atomic.Int32                  // phaseNew .. phaseStopped
	dead      atomic.Pointer[error]
	startedAt atomic.Pointer[time.Time]

	deps []Dependency                      // Config.Dependencies and the runners' health checks
	ws   atomic.Pointer[workspace.Manager] // set once started, workspaces on
	pipe atomic.Pointer[pipeline.Pipeline] // set once started

	probeMu  sync.Mutex // guards the cached JetStream check
	probedAt time.Time
	probeErr error
	noQuorum bool // the last check found no quorum (guarded by probeMu)
	// auditWeak: the last check found the audit stream weakened
	// (guarded by probeMu).
	auditWeak bool
	// store follows writes refused for want of storage; storeWasFull is
	// what checkStore last reported.
	store        storeWatch
	storeWasFull atomic.Bool
	notes        atomic.Pointer[[]string] // ReadyNotes
}

// New validates cfg and returns a worker on the connection nc.
func New(nc *nats.Conn, cfg Config) (*Worker, error) {
	if cfg.Names == (subjects.Names{}) {
		cfg.Names = subjects.MustNames(subjects.DefaultPrefix)
	}
	if len(cfg.Queues) == 0 {
		cfg.Queues = []string{subjects.DefaultQueue}
	}
	for _, q := range cfg.Queues {
		if err := subjects.ValidateQueue(q); err != nil {
			return nil, fmt.Errorf("queues: %w", err)
		}
	}
	if cfg.Concurrency <= 0 {
		cfg.Concurrency = 16
	}
	if cfg.Consumer.MaxDeliver <= 0 {
		cfg.Consumer.MaxDeliver = broker.DefaultMaxDeliver
	}
	if cfg.Consumer.MaxAckPending > 0 && cfg.Consumer.MaxAckPending < cfg.Concurrency {
		return nil, fmt.Errorf("max-ack-pending %d is below concurrency %d: it must cover the pools of all workers together", cfg.Consumer.MaxAckPending, cfg.Concurrency)
	}
	if mp, mb := maxPayload(nc), int64(cfg.Pipeline.Limits.MaxBytes); mp > 0 && mb > mp-pipeline.DLQHeadroom {
		return nil, fmt.Errorf("max body %d is over the server's max_payload %d less %d bytes for the DLQ entry's headers", mb, mp, pipeline.DLQHeadroom)
	}
	if cfg.Runners == (runner.Set{}) {
		cfg.Runners = runner.SimSet(runner.NewSim(runner.SimOptions{}))
	}
	if cfg.Log == nil {
		cfg.Log = slog.Default()
	}
	if cfg.Version == "" {
		cfg.Version = "dev"
	}
	if cfg.ReadyCache <= 0 {
		cfg.ReadyCache = 3 * time.Second
	}
	if cfg.Workspace.Enabled() {
		if cfg.Workspace.MaxWorktrees <= 0 {
			cfg.Workspace.MaxWorktrees = cfg.Concurrency
		}
		cfg.Workspace.ProtectedBranches = append(slices.Clone(cfg.Workspace.ProtectedBranches), deliveryTargets(cfg)...)
		if err := cfg.Workspace.Validate(); err != nil {
			return nil, err
		}
	}
	if err := checkDelivery(cfg); err != nil {
		return nil, err
	}
	if cfg.PullRequests != nil && (!cfg.Workspace.Enabled() || !cfg.Workspace.Push) {
		return nil, errors.New("delivery pull_request needs workspaces with push on (workspace.repo, workspace.push)")
	}
	if cfg.PullRequests != nil && cfg.Deliverer != nil {
		return nil, errors.New("both PullRequests and a Deliverer: one delivery mode at a time")
	}
	cfg.Streams.Names = cfg.Names
	cfg.Pipeline.MaxDeliver = cfg.Consumer.MaxDeliver
	js, err := jetstream.New(nc, jetstream.WithPublishAsyncTimeout(10*time.Second))
	if err != nil {
		return nil, fmt.Errorf("jetstream: %w", err)
	}
	if cfg.Lessons == nil {
		if cfg.Lessons, err = lessons.New(lessons.Deps{JS: js, Names: cfg.Names, Log: cfg.Log}, lessons.Config{Scope: cfg.LessonsScope}); err != nil {
			return nil, err
		}
	}
	w := &Worker{cfg: cfg, nc: nc, js: js, pool: consumers.NewPool(cfg.Concurrency), started: make(chan struct{}),
		id: cfg.Pipeline.Worker, counts: &counts{next: cfg.Metrics}}
	if w.id == "" {
		w.id = pipeline.DefaultWorker
	}
	w.deps = dependencies(cfg)
	if w.host, err = os.Hostname(); err != nil {
		w.host = "unknown"
	}
	return w, nil
}

// Started is closed once the worker's consumers are fetching.
func (w *Worker) Started() <-chan struct{} { return w.started }

// Workspaces returns the worker's workspace manager once it has started;
// nil when workspaces are off or before Run prepared them.
func (w *Worker) Workspaces() *workspace.Manager { return w.ws.Load() }

// Pipeline returns the worker's pipeline once it has started (nil
// before): outside actors finish parked tasks with it (CompleteParked,
// RetryParked, ...).
func (w *Worker) Pipeline() *pipeline.Pipeline { return w.pipe.Load() }

// Pool returns the worker's pool, for its counters.
func (w *Worker) Pool() *consumers.Pool { return w.pool }

// Consumers returns the worker's task consumers.
func (w *Worker) Consumers() []*consumers.TaskConsumer { return w.consumers }

// Run provisions, consumes until ctx ends, then drains within the grace
// period. It returns nil after a clean drain. A worker runs once.
func (w *Worker) Run(ctx context.Context) (err error) {
	if !w.phase.CompareAndSwap(phaseNew, phaseStarting) {
		return errors.New("worker: Run called twice")
	}
	defer func() {
		if err != nil && ctx.Err() == nil {
			w.died(fmt.Errorf("worker stopped: %w", err))
		}
		w.phase.Store(phaseStopped)
	}()
	if err := w.checkSandbox(ctx); err != nil {
		return err
	}
	var res *broker.Resources
	err = broker.WhilePlacing(ctx, w.cfg.Log, func() (err error) {
		res, err = broker.Provision(ctx, w.js, w.cfg.Streams, w.cfg.Log)
		return err
	})
	if err != nil {
		return err
	}
	w.res = res
	gateCtx, stopGate := context.WithCancel(context.WithoutCancel(ctx))
	defer stopGate()
	gate, gateDone, err := workflow.StartGate(gateCtx, res.State, w.cfg.Log)
	if err != nil {
		return err
	}
	defer func() { stopGate(); <-gateDone }()
	w.gate.Store(gate)
	deps := pipeline.Deps{
		Names:     w.cfg.Names,
		JS:        w.js,
		Audit:     res.Audit,
		Publisher: audit.NewPublisher(w.js, w.cfg.Names),
		State:     state.New(res.State),
		Cache:     cache.New(res.Cache, w.cfg.Log).WithScope(w.cfg.CacheScope),
		Blobs:     blobs.New(res.Blobs),
		Runners:   w.cfg.Runners,
		Log:       w.cfg.Log,
		Metrics:   w.counts,
		Workflows: gate,
		Lessons:   w.cfg.Lessons,
		Tracer:    w.cfg.Tracer,
		Ledger:    w.cfg.Ledger,
		Deliverer: w.cfg.Deliverer,
		Secrets:   secretScanner(w.cfg),
	}
	if w.cfg.Workspace.Enabled() {
		m, err := workspace.New(workspace.Deps{Sandbox: w.cfg.Sandbox, Log: w.cfg.Log}, w.cfg.Workspace)
		if err != nil {
			return err
		}
		if err := m.Start(ctx); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
		// Closed after the drain: the pusher flushes what approved tasks
		// queued, and nothing kept is removed.
		defer func() {
			if err := m.Close(); err != nil {
				w.cfg.Log.Warn("closing workspaces", "err", err)
			}
		}()
		w.ws.Store(m)
		deps.Workspaces = newWorkspaces(m, w.cfg.Secrets...)
		switch {
		case w.cfg.PullRequests != nil:
			deps.Deliverer = newPullRequests(w.cfg.PullRequests, w.cfg.Workspace.BaseRef)
		case w.cfg.Delivery == pipeline.DeliveryMerge && w.cfg.Deliverer == nil:
			deps.Deliverer = w.mergeDeliverer(m)
		}
	}
	h := newHandler(func(maxDeliver int) *pipeline.Pipeline {
		pc := w.cfg.Pipeline
		pc.MaxDeliver = maxDeliver
		return pipeline.New(deps, pc)
	})
	h.store = &w.store
	p := h.pipeline(w.cfg.Consumer.MaxDeliver)
	w.pipe.Store(p)
	if m := w.ws.Load(); m != nil && w.cfg.Delivery == pipeline.DeliveryMerge {
		stopMerger, err := w.startMerger(ctx, p, deps.State, m)
		if err != nil {
			return err
		}
		defer stopMerger()
	}
	ctl, err := workflow.NewController(workflow.Deps{NC: w.nc, JS: w.js, Names: w.cfg.Names, State: res.State, Audit: res.Audit,
		Pipeline: p, Log: w.cfg.Log})
	if err != nil {
		return err
	}
	stopCtl, err := ctl.Start(gateCtx)
	if err != nil {
		return err
	}
	defer stopCtl()
	rs, err := review.New(review.Deps{NC: w.nc, Names: w.cfg.Names, State: res.State, Pipeline: p, Log: w.cfg.Log},
		review.Config{ExpireAfter: w.cfg.Pipeline.Review.ExpireAfter})
	if err != nil {
		return err
	}
	stopReview, err := rs.Start(gateCtx)
	if err != nil {
		return err
	}
	defer stopReview()
	cm, _ := w.cfg.Metrics.(consumers.Metrics)
	var ch consumers.Handler = h
	if w.cfg.Middleware != nil {
		ch = w.cfg.Middleware(h)
	}
	for _, q := range w.cfg.Queues {
		ensure := func(ctx context.Context) (jetstream.Consumer, error) {
			return broker.EnsureConsumer(ctx, w.js, w.cfg.Names, q, w.cfg.Consumer, w.cfg.Log)
		}
		c, err := consumers.New(consumers.Deps{
			JetStream: w.js, Ensure: ensure, Pool: w.pool, Handler: ch, Metrics: cm,
			Hold: w.holdFetching, Log: w.cfg.Log,
		}, consumers.Config{
			Queue: q, AckWait: w.cfg.Consumer.AckWait, MaxDeliver: w.cfg.Consumer.MaxDeliver,
			Grace: w.cfg.Grace, FetchWait: w.cfg.FetchWait, Watchdog: w.cfg.Watchdog,
			RetryBase: w.cfg.Pipeline.RetryBase, RetryMax: w.cfg.Pipeline.RetryMax, Names: w.cfg.Names,
		})
		if err != nil {
			return err
		}
		w.consumers = append(w.consumers, c)
	}
	return w.consume(ctx)
}

// consume runs the consume loops and the micro service until ctx ends,
// then drains: the loops stop fetching and finish (or hand back) their
// tasks, and the service is stopped last.
func (w *Worker) consume(ctx context.Context) error {
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for i, c := range w.consumers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := c.Run(ctx)
			if ctx.Err() == nil {
				w.died(fmt.Errorf("queue %s: consume loop exited: %v", w.cfg.Queues[i], err))
			}
			if err != nil {
				mu.Lock()
				errs = append(errs, err)
				mu.Unlock()
			}
		}()
	}
	wg.Add(1)
	go func() {
		defer wg.Done()
		w.watchJetStream(ctx, w.cfg.Watchdog)
	}()
	now := time.Now()
	w.startedAt.Store(&now)
	svc, err := w.startService(now)
	if err != nil {
		w.cfg.Log.Warn("not registered as a NATS micro service; drover status will not list this worker", "err", err)
	}
	w.phase.Store(phaseRunning)
	close(w.started)
	w.cfg.Log.Info("worker started", "worker", w.id, "queues", w.cfg.Queues, "concurrency", w.cfg.Concurrency)
	<-ctx.Done()
	w.phase.Store(phaseDraining)
	w.cfg.Log.Info("draining", "in_flight", w.pool.Stats().InFlight, "grace", w.cfg.Grace)
	wg.Wait()
	if svc != nil {
		if err := svc.Stop(); err != nil {
			w.cfg.Log.Warn("stopping the micro service", "err", err)
		}
	}
	if err := w.nc.Flush(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		w.cfg.Log.Warn("flush at shutdown failed", "err", err)
	}
	return errors.Join(errs...)
}

// maxPayload is the server's max_payload as nc knows it; 0 without a
// connection (a configuration checked before connecting).
func maxPayload(nc *nats.Conn) int64 {
	if nc == nil {
		return 0
	}
	return nc.MaxPayload()
}
