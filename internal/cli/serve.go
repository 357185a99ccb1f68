package cli

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/internal/config"
	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/internal/lessons"
	"github.com/droverhq/drover/internal/ops"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/internal/tracing"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

type serveFlags struct {
	listen, data, sync, httpAddr, workerID, simCallLog string
	config, prompts                                    string
	seedFile, seedWorkflow                             string
	stopAfter, stopAfterDLQ                            int
	queues                                             []string
	concurrency, maxDeliver, maxAckPending, replicas   int
	maxBody                                            int
	ackWait, grace, cacheTTL, dupWindow, roleTimeout   time.Duration
	retryBase, retryMax, watchdog                      time.Duration
	server                                             serverAuthFlags
	dlqMaxAge, lessonsMaxAge, gcInterval               time.Duration
	dlqMaxMsgs                                         int64
	liveMaxBytes                                       int64
	lessonsScope                                       string
	cacheScope                                         string
	gc                                                 gcFlags
	reconcileConsumer                                  bool
	prices                                             ledger.Prices  // from the config file
	budgets                                            ledger.Budgets // from the config file
	// workspace: the --workspace-* flags, merged with the file's
	// workspace: block (setup and cleanup commands come from the file only).
	workspace   workspace.Config
	mergeq      mergeFlags      // --merge-*, with the file's merge: keys
	secrets     []string        // the config's secrets (applyConfig), masked in merge feedback too
	named       []redact.Secret // the same, named, for the secret scan's reasons
	delivery    deliveryFlags   // --delivery and --pr-*, merged with the file's keys
	review      config.Review   // --review*, with the file's review: block
	console     bool
	consoleAuth consoleAuthFlags
	// sandboxMode is --sandbox, with the file's sandbox: block; sandbox
	// is built from them (applyConfig), and execRoles says a role runs
	// on the exec runner.
	sandboxMode string
	sandbox     *sandbox.Sandbox
	execRoles   bool
}

func newServeCmd(g *globals) *cobra.Command {
	var f serveFlags
	cmd := &cobra.Command{
		Use:   "serve",
		Short: "Run a worker (embedding a NATS server unless --nats-url is set)",
		Long: `Run a worker: consume task requests from the queues, run planner -> implementer -> judge
for each, write every role result to the audit stream, and cache results in KV.

With no --nats-url (env NATS_URL) it embeds a NATS server with JetStream on --listen,
storing in --data, that other processes and the nats CLI can reach (see drover server
--help for its auth flags: --server-token-file, --server-user, --server-config; a
non-loopback --listen without auth logs a warning). It creates missing
streams and buckets and refuses an audit stream that allows deletion or ageing out.

SIGTERM or Ctrl-C drains: stop fetching, let running tasks finish within --grace, then
hand what is left back to the queue at once.

--config FILE (env DROVER_CONFIG) reads the worker's settings and each role's runner
(sim, exec or openai) from a YAML file (see drover config example); flags and DROVER_*
variables override it. A bad file or prompt template stops serve before it starts.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			runners, err := applyConfig(cmd, g, &f)
			if err != nil {
				return err
			}
			if err := f.server.resolve(cmd.Flags(), &f.listen); err != nil {
				return err
			}
			if err := f.checkConsole(); err != nil {
				return err
			}
			defer func() { _ = runners.Close() }() // releases the openai runners' connections
			return serve(cmd.Context(), g, f, runners)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.config, "config", "", "configuration file: worker settings and each role's runner (flags override it)")
	fl.StringVar(&f.prompts, "prompts", "", "directory of prompt templates overriding the defaults: planner.tmpl, implementer.tmpl, judge.tmpl")
	fl.StringVar(&f.listen, "listen", broker.DefaultListen, "embedded NATS server address (without --nats-url)")
	fl.StringVar(&f.data, "data", broker.DefaultDataDir, "embedded NATS server JetStream directory")
	addServerAuthFlags(fl, &f.server)
	fl.StringVar(&f.sync, "sync", "always", `embedded server fsync: "always" (before every ack) or an interval such as 2m`)
	fl.StringVar(&f.httpAddr, "http", "127.0.0.1:8080", `address of /livez, /readyz and /metrics ("" to disable)`)
	fl.BoolVar(&f.console, "console", false, "also serve the web console under /console/ on --http (see drover console --help)")
	f.consoleAuth.add(fl, "console-")
	fl.StringSliceVar(&f.queues, "queues", []string{"default"}, "queues to consume, comma-separated")
	fl.IntVar(&f.concurrency, "concurrency", 16, "tasks this worker runs at once")
	fl.DurationVar(&f.ackWait, "ack-wait", broker.DefaultAckWait, "consumer ack wait; heartbeats go at a third of it")
	fl.IntVar(&f.maxDeliver, "max-deliver", broker.DefaultMaxDeliver, "deliveries of a task before it fails (the server allows one more)")
	fl.IntVar(&f.maxAckPending, "max-ack-pending", broker.DefaultMaxAckPending, "consumer max ack pending; must cover all workers' pools")
	fl.BoolVar(&f.reconcileConsumer, "reconcile-consumer", false, "rewrite an existing queue consumer's ack wait, max deliver and max ack pending to these flags (default: the consumer's win, with a warning)")
	fl.DurationVar(&f.grace, "grace", 30*time.Second, "how long a stopping worker lets running tasks finish")
	fl.DurationVar(&f.cacheTTL, "cache-ttl", broker.DefaultCacheTTL, "how long role results stay cached")
	fl.DurationVar(&f.dupWindow, "duplicate-window", broker.DefaultDuplicateWindow, "streams' duplicate window")
	fl.DurationVar(&f.roleTimeout, "role-timeout", 30*time.Minute, "timeout of one role call")
	fl.DurationVar(&f.retryBase, "retry-backoff", time.Second, "first delay before a failed role runs again (doubles per try)")
	fl.DurationVar(&f.retryMax, "retry-backoff-max", time.Minute, "longest delay before a failed role runs again")
	fl.DurationVar(&f.watchdog, "watchdog", 30*time.Second, "how often to check for a queue with work but no deliveries (negative disables)")
	fl.DurationVar(&f.dlqMaxAge, "dlq-max-age", broker.DefaultDLQMaxAge, "the DLQ stream drops entries older than this (negative: keeps them for ever)")
	fl.Int64Var(&f.dlqMaxMsgs, "dlq-max-msgs", 0, "the DLQ stream keeps at most this many entries, dropping the oldest (0: no limit)")
	fl.Int64Var(&f.liveMaxBytes, "live-max-bytes", broker.DefaultLiveMaxBytes, "the live activity stream's size (reserved on the server), dropping the oldest lines past it")
	fl.DurationVar(&f.lessonsMaxAge, "lessons-max-age", broker.DefaultLessonsMaxAge, "the lessons stream drops lessons older than this (negative: keeps them)")
	fl.StringVar(&f.cacheScope, "cache-scope", string(cache.ScopeFleet), `who shares cached role results: "fleet" (every workflow's identical request) or "workflow" (the workflow ID is in the key)`)
	fl.StringVar(&f.lessonsScope, "lessons-scope", string(lessons.ScopeWorkflow), `whose lessons a planner recalls: "workflow" (its own workflow's) or "fleet" (every workflow's of its type)`)
	fl.DurationVar(&f.gcInterval, "gc-interval", 0, "run drover gc every interval with the retention flags below (0: never)")
	f.gc.register(cmd)
	fl.IntVar(&f.replicas, "replicas", 1, "stream and bucket replicas (3 on a 3-node cluster)")
	fl.IntVar(&f.maxBody, "max-body", 512<<10, "largest task request accepted, in bytes")
	addWorkspaceFlags(fl, &f.workspace)
	addSandboxFlags(fl, &f.sandboxMode)
	addMergeFlags(fl, &f.mergeq)
	addDeliveryFlags(fl, &f.delivery)
	addReviewFlags(fl, &f.review)
	fl.StringVar(&f.workerID, "worker-id", "", "this worker's name in state and events (default: host name and pid)")
	addFailpointFlags(fl, &f) // fault-drill flags: only in a build with -tags failpoints
	fl.StringVar(&f.seedFile, "submit", "", "once ready, submit the tasks of this file (as drover submit --file FILE --wait), show the summary, keep serving")
	fl.StringVar(&f.seedWorkflow, "submit-workflow", "", `workflow of the --submit tasks that name none (default "example-<time>")`)
	return cmd
}

func serve(ctx context.Context, g *globals, f serveFlags, runners runner.Set) error {
	if f.concurrency < 1 {
		return fmt.Errorf("--concurrency %d: must be at least 1", f.concurrency)
	}
	if f.ackWait < time.Second {
		return fmt.Errorf("--ack-wait %s: must be at least 1s", f.ackWait)
	}
	if f.maxDeliver < 1 {
		return fmt.Errorf("--max-deliver %d: must be at least 1", f.maxDeliver)
	}
	scope, err := lessons.ParseScope(f.lessonsScope)
	if err != nil {
		return fmt.Errorf("--lessons-scope: %w", err)
	}
	cacheScope, err := cache.ParseScope(f.cacheScope)
	if err != nil {
		return fmt.Errorf("--cache-scope: %w", err)
	}
	if err := checkReview(f.review); err != nil {
		return err
	}
	if f.gcInterval < 0 {
		return fmt.Errorf("--gc-interval %s: must not be negative", f.gcInterval)
	}
	if err := f.gc.options(g, false).Validate(); err != nil {
		return err
	}
	prs, err := pullRequests(f.delivery, workspaceConfig(f), os.Getenv)
	if err != nil {
		return err
	}
	id := f.workerID
	if id == "" {
		host, _ := os.Hostname()
		id = fmt.Sprintf("%s-%d", host, os.Getpid())
	}
	url := g.natsURL
	var emb *broker.Embedded
	var connOpts []nats.Option // the worker's credentials and TLS
	if url != "" {
		if connOpts, err = g.natsOptions(); err != nil {
			return err
		}
	} else {
		sync, err := broker.ParseSync(f.sync)
		if err != nil {
			return fmt.Errorf("--sync %w", err)
		}
		emb, err = broker.StartEmbedded(broker.EmbeddedConfig{Listen: f.listen, DataDir: f.data, Sync: sync, ServerName: "drover-" + sanitize(id),
			Auth: f.server.auth, ConfigFile: f.server.config, Logger: g.log})
		if err != nil {
			return err
		}
		defer emb.Shutdown() // last: after the worker drained and the connection closed
		url = emb.ClientURL()
		// The worker logs in to its own server in process, as any client.
		if connOpts, err = f.server.clientAuth(g.auth).Options(); err != nil {
			return err
		}
		connOpts = append(connOpts, emb.InProcess())
		g.log.Info("embedded NATS server", "url", url, "data", f.data, "sync", f.sync, "auth", f.server.auth)
	}
	closed := make(chan struct{})
	nc, err := broker.Connect(ctx, url, "drover worker "+id, append(connOpts, nats.ClosedHandler(func(*nats.Conn) { close(closed) }))...)
	if err != nil {
		return err
	}
	defer nc.Close()

	tracer, err := tracing.FromEnv(ctx, tracing.Options{WorkerID: id, Version: Version, Log: g.log})
	if err != nil {
		return err
	}
	defer func() { // after the drain: every span has ended
		sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		if err := tracer.Shutdown(sctx); err != nil {
			g.log.Warn("tracing: spans not exported at shutdown", "err", err)
		}
	}()
	if tracer.Enabled() {
		g.log.Info("tracing: exporting spans over OTLP/HTTP")
	}

	metrics := ops.NewMetrics()
	led, err := newLedger(ctx, nc, g, f, metrics)
	if err != nil {
		return err
	}
	setFailpoints(f.stopAfter, f.stopAfterDLQ) // fault drills: only in a build with -tags failpoints
	w, err := worker.New(nc, worker.Config{
		Names:       g.names,
		Queues:      f.queues,
		Concurrency: f.concurrency,
		Consumer:    broker.ConsumerSettings{AckWait: f.ackWait, MaxDeliver: f.maxDeliver, MaxAckPending: f.maxAckPending, Reconcile: f.reconcileConsumer},
		Streams: broker.Settings{Replicas: f.replicas, DuplicateWindow: f.dupWindow, CacheTTL: f.cacheTTL,
			DLQMaxAge: f.dlqMaxAge, DLQMaxMsgs: f.dlqMaxMsgs, LessonsMaxAge: f.lessonsMaxAge,
			LiveMaxBytes: f.liveMaxBytes},
		LessonsScope: scope,
		CacheScope:   cacheScope,
		Grace:        f.grace,
		Watchdog:     f.watchdog,
		Runners:      runners,
		Version:      Version,
		Log:          g.log,
		Metrics:      metrics,
		Tracer:       tracer,
		Ledger:       led,
		Workspace:    workspaceConfig(f),
		Delivery:     pipeline.DeliveryMode(f.delivery.mode),
		Merge:        f.mergeq.merge,
		Secrets:      f.secrets,
		NamedSecrets: f.named,
		PullRequests: prs,
		Sandbox:      f.sandbox,
		ExecRunners:  f.execRoles,
		Pipeline: pipeline.Config{
			Worker: id, RoleTimeout: f.roleTimeout, RetryBase: f.retryBase, RetryMax: f.retryMax,
			Limits: subjects.Limits{MaxBytes: f.maxBody},
			Review: pipeline.ReviewPolicy{Mode: f.review.Mode, Queues: f.review.Queues, ExpireAfter: f.review.ExpireAfter},
		},
	})
	if err != nil {
		return err
	}

	var wg sync.WaitGroup
	httpCtx, stopHTTP := context.WithCancel(context.WithoutCancel(ctx))
	defer func() { stopHTTP(); wg.Wait() }()
	var httpOpts []ops.Option
	if f.console && f.httpAddr != "" {
		wg.Add(1)
		opt, err := mountConsole(httpCtx, g, nc, f.httpAddr, f.consoleAuth, wg.Done)
		if err != nil {
			wg.Done()
			return err
		}
		httpOpts = append(httpOpts, opt)
	}
	if f.httpAddr != "" {
		httpOpts = append(httpOpts, ops.WithReadyNotes(w.ReadyNotes))
		hs, err := ops.Listen(f.httpAddr, w.CheckLive, w.CheckReady, metrics.Registry, httpOpts...)
		if err != nil {
			return err
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := hs.Serve(httpCtx); err != nil {
				g.log.Warn("http server", "err", err)
			}
		}()
		g.log.Info("http endpoints", "addr", hs.Addr())
	}
	if f.gcInterval > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			gcEvery(httpCtx, g, nc, f)
		}()
	}
	// The submitter waits for the worker to start; it is stopped when Run
	// returns, so a worker that fails before it starts (say, a refused
	// audit stream) ends serve with its error instead of a wait forever.
	seedCtx, stopSeed := context.WithCancel(ctx)
	defer stopSeed()
	if f.seedFile != "" {
		wg.Add(1)
		go func() {
			defer wg.Done()
			seed(seedCtx, g, w, url, f)
		}()
	}
	runErr := w.Run(ctx)
	stopSeed()
	if err := nc.Drain(); err != nil && !errors.Is(err, nats.ErrConnectionClosed) {
		g.log.Warn("drain", "err", err)
	} else {
		<-closed // Drain always ends in Close, within its timeout
	}
	g.log.Info("worker stopped", "worker", id)
	return runErr
}

func sanitize(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' {
			return r
		}
		return '-'
	}, s)
}
