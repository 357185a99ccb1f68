// Package pipeline is one task's life: where to resume, planner ->
// implementer -> judge, the verdict loop, and the terminal outcome.
//
// Every change of a task is committed by a compare-and-set on its state
// revision, carrying the audit events it implies in the state's outbox; the
// events are then published in order, each fenced on the task's last audit
// sequence. A worker that loses either check has lost its claim: it writes
// nothing more and leaves the message alone (Abandon).
//
// Each role that ran is recorded as it returns, before the next role starts:
// its event (with its change, for an implementer) and the task's state. A
// crash at any instant after a role returned never runs it again, whatever
// the cache setting; the cache only saves runner calls. A role answered by
// the cache cost nothing, so its record may ride on the next write: a fully
// cached task still makes one state write.
package pipeline

import (
	"context"
	"errors"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/blobs"
	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// Deps are the pipeline's collaborators.
type Deps struct {
	Names     subjects.Names
	JS        jetstream.JetStream
	Audit     jetstream.Stream
	Publisher *audit.Publisher
	State     *state.Store
	Cache     *cache.Cache
	Blobs     *blobs.Store
	// Runners run the roles; each is wrapped with a timeout and panic
	// recovery by New.
	Runners runner.Set
	Log     *slog.Logger
	Metrics Metrics
	// Workflows gates every role on its workflow's state (nil: all run).
	Workflows Workflows
	// Lessons records rejections and failures and feeds the planner
	// (nil: no lessons).
	Lessons Lessons
	// Tracer starts a span per delivery and per role (nil: NopTracer).
	Tracer Tracer
	// Ledger prices each role's result into its event's metadata (nil:
	// events carry no cost).
	Ledger Ledger
	// Workspaces gives each task a git worktree its implementer and judge
	// run in, and records, caches, replays and pushes its change (nil:
	// workspaces off).
	Workspaces Workspaces
	// Deliverer delivers approved tasks (nil: delivery "branch", the
	// branch pushed when pushing is configured and the task completed).
	Deliverer Deliverer
	// Secrets are the configured secrets no recorded change may hold
	// (see scanChange; nil: changes are not scanned).
	Secrets *redact.Redactor
}

// DefaultWorker is the worker name of a Config without one.
const DefaultWorker = "drover"

// Config holds the pipeline's settings. Zero fields take their defaults.
type Config struct {
	// Worker names this worker in state and events (DefaultWorker;
	// drover serve passes the host name and pid).
	Worker string
	// Limits bound request decoding (default 512 KiB, depth 32).
	Limits subjects.Limits
	// MaxDeliver is the workers' delivery limit (default 5).
	MaxDeliver int
	// RoleTimeout bounds one role call (default 30m).
	RoleTimeout time.Duration
	// RetryBase is the first nak delay after a role error, doubled per
	// delivery up to RetryMax (defaults 1s and 1m).
	RetryBase, RetryMax time.Duration
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Review is the review gate (default: off for every queue).
	Review ReviewPolicy
}

func (c Config) withDefaults() Config {
	if c.MaxDeliver <= 0 {
		c.MaxDeliver = 5
	}
	if c.RoleTimeout <= 0 {
		c.RoleTimeout = 30 * time.Minute
	}
	if c.RetryBase <= 0 {
		c.RetryBase = time.Second
	}
	if c.RetryMax <= 0 {
		c.RetryMax = time.Minute
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Worker == "" {
		c.Worker = DefaultWorker
	}
	return c
}

// Pipeline handles task deliveries.
type Pipeline struct {
	d       Deps
	cfg     Config
	runners [3]runner.Runner
	ids     [3]string
	kinds   [3]string // the ids without their fingerprints, for spans
	cached  [3]bool   // whether the role's results go through the cache
	live    liveStats // live activity lines published and dropped
}

// New returns a Pipeline.
func New(d Deps, cfg Config) *Pipeline {
	cfg = cfg.withDefaults()
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Metrics == nil {
		d.Metrics = nopMetrics{}
	}
	if d.Tracer == nil {
		d.Tracer = NopTracer{}
	}
	p := &Pipeline{d: d, cfg: cfg}
	for i, r := range subjects.Roles {
		base := d.Runners.For(r)
		p.ids[i] = base.Identity()
		p.kinds[i] = runnerKind(p.ids[i])
		p.cached[i] = d.Runners.Cached(r)
		p.runners[i] = runner.Chain(base, runner.WithRecover(), runner.WithTimeout(cfg.RoleTimeout))
	}
	return p
}

func roleIndex(r subjects.Role) int {
	switch r {
	case subjects.RolePlanner:
		return 0
	case subjects.RoleImplementer:
		return 1
	}
	return 2
}

// Handle runs one delivery as far as it can go and says what to do with the
// message. The delivery is traced as one span, a child of the request's
// traceparent when it has one.
func (p *Pipeline) Handle(ctx context.Context, d consumers.Msg) (out consumers.Outcome) {
	tp := traceparentOf(d)
	if raw := rawTraceparent(d); tp == "" && raw != "" {
		withMsg(p.d.Log, d).Debug("invalid traceparent header dropped", "bytes", len(raw))
	}
	ctx, span := p.d.Tracer.StartTask(ctx, tp)
	defer func() { endTask(span, out) }()
	span.SetString(AttrQueue, d.Queue)
	span.SetInt(AttrStreamSeq, int64(d.StreamSeq))
	span.SetInt(AttrDelivery, int64(d.NumDelivered))
	out = p.handle(ctx, d, span)
	if out.Action == consumers.Nak && errors.Is(context.Cause(ctx), consumers.ErrClaimLost) {
		// The message may belong to another delivery by now: a nak would
		// hand it back under its new owner.
		return consumers.Outcome{Action: consumers.Abandon, Err: consumers.ErrClaimLost}
	}
	return out
}

func (p *Pipeline) handle(ctx context.Context, d consumers.Msg, span Span) consumers.Outcome {
	req, rej := subjects.DecodeTask(d.Body, p.cfg.Limits)
	if rej != nil {
		span.SetString(AttrWorkflow, orReserved(rej.Workflow))
		span.SetString(AttrTask, orReserved(rej.Task))
		return p.reject(ctx, d, rej)
	}
	span.SetString(AttrWorkflow, req.Workflow)
	span.SetString(AttrTask, req.ID)
	t, out, ok := p.claim(ctx, d, req)
	if !ok {
		return out
	}
	out = p.run(ctx, t)
	// A run that ends without another write still owns the publishing of
	// its last outbox: an error there decides what happens to the message.
	if err := t.joinFlush(); err != nil && out.Action != consumers.Abandon {
		out = p.errOutcome(t, err)
	}
	// The worktree lives for one delivery: its recorded change is in the
	// state and the audit stream, so whoever runs the task next rebuilds it.
	p.releaseWorkspace(ctx, t, out)
	return out
}
