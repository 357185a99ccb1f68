package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/pool"
	"github.com/droverhq/drover/subjects"
)

// floorFetchWait bounds one fetch of the floor's pool, as a worker's
// FetchWait does.
const floorFetchWait = 5 * time.Second

// floor is the floor phase's streams, bucket and consumer, under the
// deployment's prefix but apart from Drover's own.
type floor struct {
	cfg               Config
	js                jetstream.JetStream
	tasks, audit      string // stream names
	bucket            string
	taskSubj, auditTo string // the task subject; the audit subject prefix
	kv                jetstream.KeyValue
	end               []time.Time
	handled           []atomic.Bool // a redelivered message counts once
	done              atomic.Int64
	allDone           chan struct{}
	fail              context.CancelCauseFunc
}

// runFloor runs the floor phase: the same number of messages through the
// least per-task work a worker could do with plain JetStream, with a pool
// of the same size. It removes its streams and bucket afterwards.
func runFloor(ctx context.Context, cfg Config, url string) (Phase, error) {
	ncW, err := connect(url, "floor worker", cfg.Options)
	if err != nil {
		return Phase{}, err
	}
	defer ncW.Close()
	ncP, err := connect(url, "floor producer", cfg.Options)
	if err != nil {
		return Phase{}, err
	}
	defer ncP.Close()
	jsW, err := jetstream.New(ncW)
	if err != nil {
		return Phase{}, fmt.Errorf("bench: jetstream: %w", err)
	}
	jsP, err := jetstream.New(ncP)
	if err != nil {
		return Phase{}, fmt.Errorf("bench: jetstream: %w", err)
	}
	p, up := cfg.Names.Prefix(), strings.ToUpper(cfg.Names.Prefix())
	f := &floor{
		cfg: cfg, js: jsW,
		tasks: up + "_BENCH_FLOOR", audit: up + "_BENCH_FLOOR_AUDIT", bucket: p + "_bench_floor",
		taskSubj: p + ".bench_floor.tasks", auditTo: p + ".bench_floor.audit.",
		end: make([]time.Time, cfg.Tasks), handled: make([]atomic.Bool, cfg.Tasks), allDone: make(chan struct{}),
	}
	f.remove(ctx)
	defer f.remove(context.WithoutCancel(ctx))
	cons, err := f.create(ctx)
	if err != nil {
		return Phase{}, err
	}
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout, errTimeout)
	defer cancel()
	ctx, f.fail = context.WithCancelCause(ctx)
	defer f.fail(nil)

	fetchCtx, stopFetch := context.WithCancel(ctx)
	pl := pool.New(cfg.Concurrency)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); f.fetchLoop(fetchCtx, ctx, cons, pl) }()
	submit := make([]time.Time, cfg.Tasks)
	cpu := processCPU()
	err = f.submit(ctx, jsP, submit)
	if err == nil {
		select {
		case <-f.allDone:
		case <-ctx.Done():
			err = fmt.Errorf("bench: floor phase: %w", context.Cause(ctx))
		}
	}
	cpu = processCPU() - cpu
	stopFetch()
	wg.Wait()
	pl.Wait(context.Background())
	if err != nil {
		return Phase{}, err
	}
	ph := newPhase(submit, f.end)
	ph.setCPU(cpu, cfg.Tasks)
	ph.WritesPerTask, err = f.writesPerTask(ctx)
	return ph, err
}

// create makes the floor's work-queue stream, audit-like stream, bucket
// and durable pull consumer, with the settings of Drover's own.
func (f *floor) create(ctx context.Context) (jetstream.Consumer, error) {
	for _, sc := range []jetstream.StreamConfig{
		{Name: f.tasks, Subjects: []string{f.taskSubj}, Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute},
		{Name: f.audit, Subjects: []string{f.auditTo + ">"}, Storage: jetstream.FileStorage, Duplicates: 2 * time.Minute},
	} {
		if _, err := f.js.CreateStream(ctx, sc); err != nil {
			return nil, fmt.Errorf("bench: floor stream %s: %w", sc.Name, err)
		}
	}
	kv, err := f.js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: f.bucket, History: 1, Storage: jetstream.FileStorage})
	if err != nil {
		return nil, fmt.Errorf("bench: floor bucket %s: %w", f.bucket, err)
	}
	f.kv = kv
	cons, err := f.js.CreateConsumer(ctx, f.tasks, jetstream.ConsumerConfig{
		Durable: "bench-floor", AckPolicy: jetstream.AckExplicitPolicy, AckWait: 30 * time.Second,
		MaxAckPending: max(1000, f.cfg.Concurrency),
	})
	if err != nil {
		return nil, fmt.Errorf("bench: floor consumer: %w", err)
	}
	return cons, nil
}

// remove deletes the floor's streams and bucket, if they exist.
func (f *floor) remove(ctx context.Context) {
	for _, s := range []string{f.tasks, f.audit} {
		if err := f.js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			f.cfg.Log.Warn("could not delete a floor stream", "stream", s, "err", err)
		}
	}
	if err := f.js.DeleteKeyValue(ctx, f.bucket); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		f.cfg.Log.Warn("could not delete the floor bucket", "bucket", f.bucket, "err", err)
	}
}

// submit publishes the floor's messages asynchronously, recording each
// submit time, and checks every PubAck.
func (f *floor) submit(ctx context.Context, js jetstream.JetStream, submit []time.Time) error {
	futures := make([]jetstream.PubAckFuture, len(submit))
	for i := range submit {
		id := strconv.Itoa(i)
		msg := &nats.Msg{Subject: f.taskSubj, Header: nats.Header{}, Data: []byte(id)}
		msg.Header.Set(subjects.HeaderMsgID, "floor/"+id)
		submit[i] = time.Now()
		var err error
		if futures[i], err = js.PublishMsgAsync(msg); err != nil {
			return fmt.Errorf("bench: floor submit %d: %w", i, err)
		}
	}
	return checkAcks(ctx, js, futures)
}

// fetchLoop fetches only for free pool slots, as a task consumer does,
// until fetchCtx ends; handlers run under workCtx.
func (f *floor) fetchLoop(fetchCtx, workCtx context.Context, cons jetstream.Consumer, pl *pool.Pool) {
	for fetchCtx.Err() == nil {
		if pl.Acquire(fetchCtx) != nil {
			return
		}
		n := 1
		for n < pl.Size() && pl.TryAcquire() {
			n++
		}
		got, err := f.fetch(fetchCtx, workCtx, cons, pl, n)
		for range n - got {
			pl.Release()
		}
		if err != nil && fetchCtx.Err() == nil {
			f.fail(fmt.Errorf("bench: floor fetch: %w", err))
			return
		}
	}
}

func (f *floor) fetch(fetchCtx, workCtx context.Context, cons jetstream.Consumer, pl *pool.Pool, n int) (int, error) {
	ctx, cancel := context.WithTimeout(fetchCtx, floorFetchWait)
	defer cancel()
	batch, err := cons.Fetch(n, jetstream.FetchContext(ctx))
	if err != nil {
		return 0, err
	}
	got := 0
	for msg := range batch.Messages() {
		got++
		pl.Go(func() { f.handle(workCtx, msg) })
	}
	if err := batch.Error(); err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return got, err
	}
	return got, nil
}

// floorEvent is an audit-like event of about 600 bytes.
type floorEvent struct {
	EventID   string    `json:"event_id"`
	EventType string    `json:"event_type"`
	Workflow  string    `json:"workflow_id"`
	Task      string    `json:"task_id"`
	Actor     string    `json:"actor"`
	Timestamp time.Time `json:"timestamp"`
	Reasoning string    `json:"reasoning"`
	Status    string    `json:"status"`
}

var floorReasoning = strings.Repeat("the floor does the least a worker can do. ", 10)

// handle is the floor's per-task work: one KV get and one KV put, one
// audit-like publish with a Nats-Msg-Id, and an ack.
func (f *floor) handle(ctx context.Context, msg jetstream.Msg) {
	id := string(msg.Data())
	i, err := strconv.Atoi(id)
	if err != nil || i < 0 || i >= len(f.end) {
		f.fail(fmt.Errorf("bench: floor message %q is not one of the bench's", id))
		return
	}
	key := "t" + id
	if _, err := f.kv.Get(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		f.fail(fmt.Errorf("bench: floor kv get: %w", err))
		return
	}
	if _, err := f.kv.Put(ctx, key, []byte(`{"state":"completed","stage":"done","attempt":1}`)); err != nil {
		f.fail(fmt.Errorf("bench: floor kv put: %w", err))
		return
	}
	body, _ := json.Marshal(floorEvent{EventID: "floor/" + id, EventType: "task_completed", Workflow: "floor", Task: key,
		Actor: "system", Timestamp: time.Now().UTC(), Reasoning: floorReasoning, Status: "success"})
	ev := &nats.Msg{Subject: f.auditTo + key, Header: nats.Header{}, Data: body}
	ev.Header.Set(subjects.HeaderMsgID, "floor/"+id)
	if _, err := f.js.PublishMsg(ctx, ev); err != nil {
		f.fail(fmt.Errorf("bench: floor audit publish: %w", err))
		return
	}
	if err := msg.Ack(); err != nil {
		f.fail(fmt.Errorf("bench: floor ack: %w", err))
		return
	}
	if !f.handled[i].CompareAndSwap(false, true) {
		return
	}
	f.end[i] = time.Now()
	if f.done.Add(1) == int64(len(f.end)) {
		close(f.allDone)
	}
}

// writesPerTask counts the floor's stored writes per task, its request
// included.
func (f *floor) writesPerTask(ctx context.Context) (float64, error) {
	seqs, err := lastSeqs(ctx, f.js, []string{f.tasks, f.audit, "KV_" + f.bucket})
	if err != nil {
		return 0, err
	}
	return float64(seqs[0]+seqs[1]+seqs[2]) / float64(len(f.end)), nil
}
