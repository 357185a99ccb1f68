package benchlab

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/bench"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/subjects"
)

// rawFetchWait bounds one fetch of a raw phase's pool, as a worker's
// FetchWait does.
const rawFetchWait = 5 * time.Second

// rawAsyncWindow bounds a raw phase's asynchronous publishes in flight, as
// a careful worker bounds its own: well above what a pool of tasks with a
// few publishes each has in flight, so the window never stalls a task.
const rawAsyncWindow = 1024

// rawWork is a raw phase's per-task work between receiving message i, of
// body, and acking it.
type rawWork func(ctx context.Context, r *raw, i int, body []byte) error

// raw is a phase that drives plain JetStream, with none of Drover's code:
// its own work-queue stream, audit-like stream and buckets under the
// deployment's prefix (apart from Drover's own), with the settings of
// Drover's (the server's work for a message depends on them), a durable
// pull consumer with Drover's settings, a pool of the worker's size that
// fetches only for free slots, and its publishes and KV reads and writes
// made with the jetstream package, as Drover's pipeline makes them. Its
// streams and buckets are removed afterwards.
type raw struct {
	name              string // the phase, in errors
	cfg               Config
	js                jetstream.JetStream
	tasks, audit      string          // stream names
	buckets           []string        // bucket names
	ttls              []time.Duration // per bucket, its TTL (0 or missing: none)
	taskSubj, auditTo string          // the task subject; the audit subject prefix
	taskStreamSubj    []string        // the tasks stream's subjects, as Drover's: one per queue, scheduled retries
	kv                []jetstream.KeyValue
	ops               *opTimes // per-operation latencies
	work              rawWork
	prepare           func(ctx context.Context, r *raw) error // before the submit, untimed; may be nil
	prepared          uint64                                  // the writes prepare made, not counted
	end               []time.Time
	handled           []atomic.Bool // a redelivered message counts once
	done              atomic.Int64
	allDone           chan struct{}
	fail              context.CancelCauseFunc
	// request, when set, is message i's body and headers (the phase sets
	// the subject) and index tells a message's i from it; by default the
	// body is i itself.
	request func(i int) (*nats.Msg, error)
	index   func(msg jetstream.Msg) (int, bool)
}

// newRaw names a raw phase's streams and buckets after its tag.
func newRaw(cfg Config, name, tag string, buckets int, work rawWork) *raw {
	cfg = withDefaults(cfg)
	p, up := cfg.Names.Prefix(), strings.ToUpper(cfg.Names.Prefix())
	r := &raw{
		name: name, cfg: cfg, work: work,
		tasks: up + "_BENCH_" + strings.ToUpper(tag), audit: up + "_BENCH_" + strings.ToUpper(tag) + "_AUDIT",
		taskSubj: p + ".bench_" + tag + ".tasks." + bench.Queue, auditTo: p + ".bench_" + tag + ".audit.",
		taskStreamSubj: []string{p + ".bench_" + tag + ".tasks.*", p + ".bench_" + tag + ".tasks.*.retry.>"},
		end:            make([]time.Time, cfg.Tasks), handled: make([]atomic.Bool, cfg.Tasks), allDone: make(chan struct{}),
		ops: newOpTimes(),
	}
	for i := range buckets {
		r.buckets = append(r.buckets, fmt.Sprintf("%s_bench_%s_%d", p, tag, i))
	}
	return r
}

// run runs the phase: it submits the messages, lets the pool work them off
// and measures the throughput, the latencies and the process's CPU.
func (r *raw) run(ctx context.Context, url string) (Result, error) {
	ncW, err := bench.Connect(url, r.name+" worker", r.cfg.Options)
	if err != nil {
		return Result{}, err
	}
	defer ncW.Close()
	ncP, err := bench.Connect(url, r.name+" producer", r.cfg.Options)
	if err != nil {
		return Result{}, err
	}
	defer ncP.Close()
	if r.js, err = jetstream.New(ncW, jetstream.WithPublishAsyncMaxPending(rawAsyncWindow)); err != nil {
		return Result{}, fmt.Errorf("benchlab: jetstream: %w", err)
	}
	jsP, err := jetstream.New(ncP)
	if err != nil {
		return Result{}, fmt.Errorf("benchlab: jetstream: %w", err)
	}
	r.remove(ctx)
	defer r.remove(context.WithoutCancel(ctx))
	cons, err := r.create(ctx)
	if err != nil {
		return Result{}, err
	}
	if r.prepare != nil {
		if err := r.prepare(ctx, r); err != nil {
			return Result{}, fmt.Errorf("benchlab: %s: %w", r.name, err)
		}
		if r.prepared, err = r.writes(ctx); err != nil {
			return Result{}, err
		}
	}
	ctx, cancel := context.WithTimeoutCause(ctx, r.cfg.Timeout, bench.ErrTimeout)
	defer cancel()
	ctx, r.fail = context.WithCancelCause(ctx)
	defer r.fail(nil)

	fetchCtx, stopFetch := context.WithCancel(ctx)
	pl := consumers.NewPool(r.cfg.Concurrency)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); r.fetchLoop(fetchCtx, ctx, cons, pl) }()
	submit := make([]time.Time, r.cfg.Tasks)
	bench.CollectHeap()
	use := bench.MeasureUsage()
	err = r.submit(ctx, jsP, submit)
	if err == nil {
		select {
		case <-r.allDone:
		case <-ctx.Done():
			err = fmt.Errorf("benchlab: %s phase: %w", r.name, context.Cause(ctx))
		}
	}
	used := use.Since()
	stopFetch()
	wg.Wait()
	pl.Wait(context.Background())
	if err != nil {
		return Result{}, err
	}
	res := Result{Phase: bench.NewPhase(submit, r.end), Ops: r.ops.stats(r.cfg.Tasks)}
	res.SetUsage(used, r.cfg.Tasks)
	res.WritesPerTask, err = r.writesPerTask(ctx)
	return res, err
}

// create makes the phase's work-queue stream, append-only audit-like
// stream, buckets and durable pull consumer, with the settings of Drover's
// own: the tasks stream allows message schedules (and so rollups), as the
// contract's does for scheduled retries, and the consumer is filtered on
// the one queue's subject, with Drover's ack wait, deliveries and window.
func (r *raw) create(ctx context.Context) (jetstream.Consumer, error) {
	for _, sc := range []jetstream.StreamConfig{
		{Name: r.tasks, Subjects: r.taskStreamSubj, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
			Duplicates: broker.DefaultDuplicateWindow, AllowMsgSchedules: true, AllowRollup: true},
		{Name: r.audit, Subjects: []string{r.auditTo + ">"}, Storage: jetstream.FileStorage, Duplicates: broker.DefaultDuplicateWindow, DenyDelete: true, DenyPurge: true},
	} {
		if _, err := broker.CreateStream(ctx, r.js, sc); err != nil {
			return nil, fmt.Errorf("benchlab: %s stream %s: %w", r.name, sc.Name, err)
		}
	}
	for i, b := range r.buckets {
		var ttl time.Duration
		if i < len(r.ttls) {
			ttl = r.ttls[i]
		}
		kv, err := r.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: b, History: 1, Storage: jetstream.FileStorage, TTL: ttl})
		if err != nil {
			return nil, fmt.Errorf("benchlab: %s bucket %s: %w", r.name, b, err)
		}
		r.kv = append(r.kv, kv)
	}
	cons, err := r.js.CreateConsumer(ctx, r.tasks, jetstream.ConsumerConfig{
		Durable: "bench", FilterSubject: r.taskSubj, DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: broker.DefaultAckWait, MaxDeliver: broker.DefaultMaxDeliver + 1,
		MaxAckPending: max(broker.DefaultMaxAckPending, r.cfg.Concurrency),
	})
	if err != nil {
		return nil, fmt.Errorf("benchlab: %s consumer: %w", r.name, err)
	}
	return cons, nil
}

// remove deletes the phase's streams and buckets, if they exist. The
// audit-like stream denies purge, not deletion of the whole stream.
func (r *raw) remove(ctx context.Context) {
	for _, s := range []string{r.tasks, r.audit} {
		if err := r.js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			r.cfg.Log.Warn("could not delete a bench stream", "stream", s, "err", err)
		}
	}
	for _, b := range r.buckets {
		if err := r.js.DeleteKeyValue(ctx, b); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			r.cfg.Log.Warn("could not delete a bench bucket", "bucket", b, "err", err)
		}
	}
}

// submit publishes the phase's messages asynchronously, recording each
// submit time, and checks every PubAck.
func (r *raw) submit(ctx context.Context, js jetstream.JetStream, submit []time.Time) error {
	futures := make([]jetstream.PubAckFuture, len(submit))
	for i := range submit {
		msg, err := r.message(i)
		if err != nil {
			return fmt.Errorf("benchlab: %s request %d: %w", r.name, i, err)
		}
		submit[i] = time.Now()
		if futures[i], err = js.PublishMsgAsync(msg); err != nil {
			return fmt.Errorf("benchlab: %s submit %d: %w", r.name, i, err)
		}
	}
	return bench.CheckAcks(ctx, js, futures)
}

// message is the phase's message i.
func (r *raw) message(i int) (*nats.Msg, error) {
	if r.request != nil {
		msg, err := r.request(i)
		if err != nil {
			return nil, err
		}
		msg.Subject = r.taskSubj
		return msg, nil
	}
	id := strconv.Itoa(i)
	msg := &nats.Msg{Subject: r.taskSubj, Header: nats.Header{}, Data: []byte(id)}
	msg.Header.Set(subjects.HeaderMsgID, r.name+"/"+id)
	return msg, nil
}

// indexOf is the i of a message of the phase.
func (r *raw) indexOf(msg jetstream.Msg) (int, bool) {
	if r.index != nil {
		return r.index(msg)
	}
	i, err := strconv.Atoi(string(msg.Data()))
	return i, err == nil
}

// fetchLoop fetches only for free pool slots, as a task consumer does,
// until fetchCtx ends; handlers run under workCtx.
func (r *raw) fetchLoop(fetchCtx, workCtx context.Context, cons jetstream.Consumer, pl *consumers.Pool) {
	for fetchCtx.Err() == nil {
		n, err := pl.AcquireFree(fetchCtx)
		if err != nil {
			return
		}
		got, err := r.fetch(fetchCtx, workCtx, cons, pl, n)
		for range n - got {
			pl.Release()
		}
		if err != nil && fetchCtx.Err() == nil {
			r.fail(fmt.Errorf("benchlab: %s fetch: %w", r.name, err))
			return
		}
	}
}

func (r *raw) fetch(fetchCtx, workCtx context.Context, cons jetstream.Consumer, pl *consumers.Pool, n int) (int, error) {
	ctx, cancel := context.WithTimeout(fetchCtx, rawFetchWait)
	defer cancel()
	batch, err := cons.Fetch(n, jetstream.FetchContext(ctx))
	if err != nil {
		return 0, err
	}
	got := 0
	for msg := range batch.Messages() {
		got++
		pl.Go(func() { r.handle(workCtx, msg) })
	}
	if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return got, err
	}
	return got, nil
}

// handle does the phase's work for one message, acks it and records when
// it ended.
func (r *raw) handle(ctx context.Context, msg jetstream.Msg) {
	i, ok := r.indexOf(msg)
	if !ok || i < 0 || i >= len(r.end) {
		r.fail(fmt.Errorf("benchlab: %s message %.80q is not one of the bench's", r.name, msg.Data()))
		return
	}
	if err := r.work(ctx, r, i, msg.Data()); err != nil {
		r.fail(fmt.Errorf("benchlab: %s: %w", r.name, err))
		return
	}
	start := time.Now()
	err := msg.Ack()
	r.ops.since("ack", start)
	if err != nil {
		r.fail(fmt.Errorf("benchlab: %s ack: %w", r.name, err))
		return
	}
	if !r.handled[i].CompareAndSwap(false, true) {
		return
	}
	r.end[i] = time.Now()
	if r.done.Add(1) == int64(len(r.end)) {
		close(r.allDone)
	}
}

// writesPerTask counts the phase's stored writes per task, its request
// included, leaving out what prepare wrote.
func (r *raw) writesPerTask(ctx context.Context) (float64, error) {
	total, err := r.writes(ctx)
	if err != nil {
		return 0, err
	}
	return float64(total-r.prepared) / float64(len(r.end)), nil
}

// writes is the sum of the last sequences of the phase's streams and
// buckets: every write stored in them so far.
func (r *raw) writes(ctx context.Context) (uint64, error) {
	streams := []string{r.tasks, r.audit}
	for _, b := range r.buckets {
		streams = append(streams, "KV_"+b)
	}
	seqs, err := bench.LastSeqs(ctx, r.js, streams)
	if err != nil {
		return 0, err
	}
	var total uint64
	for _, s := range seqs {
		total += s
	}
	return total, nil
}
