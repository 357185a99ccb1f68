package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// own is the Drover side of a phase: the bench's own streams and buckets,
// provisioned on the server, and the connections a worker and a producer
// use.
type own struct {
	ncW      *nats.Conn          // the worker's connection
	js       jetstream.JetStream // the producer's
	settings broker.Settings
}

// withOwn provisions the bench's own streams and buckets, runs fn, and
// then deletes them (with Keep, only the bench's consumer goes).
func withOwn(ctx context.Context, cfg Config, url string, fn func(o own) error) error {
	ncW, err := Connect(url, "worker", cfg.Options)
	if err != nil {
		return err
	}
	defer ncW.Close()
	ncP, err := Connect(url, "producer", cfg.Options)
	if err != nil {
		return err
	}
	defer ncP.Close()
	js, err := jetstream.New(ncP)
	if err != nil {
		return fmt.Errorf("bench: jetstream: %w", err)
	}
	if err := checkPrefix(ctx, js, cfg.Names); err != nil {
		return err
	}
	settings, err := currentSettings(ctx, js, cfg.Names)
	if err != nil {
		return err
	}
	defer func() { // the streams and buckets are the bench's own: leave no trace of them
		ctx := context.WithoutCancel(ctx)
		if cfg.Keep {
			_ = js.DeleteConsumer(ctx, cfg.Names.TasksStream(), cfg.Names.Consumer(Queue))
			return
		}
		removeOwn(ctx, cfg, js)
	}()
	// Provision before counting, so creating the streams is not counted.
	if _, err := broker.Provision(ctx, js, settings, cfg.Log); err != nil {
		return fmt.Errorf("bench: %w", err)
	}
	return fn(own{ncW: ncW, js: js, settings: settings})
}

// runDrover runs the Drover phase: a worker with the sim runner, N cold
// tasks submitted as fast as the server acknowledges them, each timed to
// its terminal event in the audit stream, and the stored writes counted.
func runDrover(ctx context.Context, cfg Config, url string) (ph Phase, w Writes, err error) {
	err = withOwn(ctx, cfg, url, func(o own) error {
		streams := writeStreams(cfg.Names)
		before, err := LastSeqs(ctx, o.js, streams)
		if err != nil {
			return err
		}
		stop, err := startWorker(ctx, cfg, o.ncW, o.settings, nil, runner.Set{})
		if err != nil {
			return err
		}
		wf := NewWorkflowID()
		ph, err = timeRun(ctx, cfg, o.js, "drover phase", cfg.Tasks, ColdRequests(wf))
		if serr := stop(); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		after, err := LastSeqs(ctx, o.js, streams)
		if err != nil {
			return err
		}
		w = countWrites(streams, before, after, cfg.Tasks)
		return nil
	})
	return ph, w, err
}

// currentSettings keeps an existing deployment's duplicate window, cache
// TTL and replicas, so provisioning for the bench changes nothing on a
// shared server.
func currentSettings(ctx context.Context, js jetstream.JetStream, names subjects.Names) (broker.Settings, error) {
	s := broker.Settings{Names: names}
	st, err := js.Stream(ctx, names.TasksStream())
	switch {
	case err == nil:
		s.DuplicateWindow, s.Replicas = st.CachedInfo().Config.Duplicates, st.CachedInfo().Config.Replicas
	case !errors.Is(err, jetstream.ErrStreamNotFound):
		return s, fmt.Errorf("bench: stream %s: %w", names.TasksStream(), err)
	}
	kv, err := js.KeyValue(ctx, names.CacheBucket())
	switch {
	case err == nil:
		status, err := kv.Status(ctx)
		if err != nil {
			return s, fmt.Errorf("bench: bucket %s: %w", names.CacheBucket(), err)
		}
		s.CacheTTL = status.TTL()
	case !errors.Is(err, jetstream.ErrBucketNotFound):
		return s, fmt.Errorf("bench: bucket %s: %w", names.CacheBucket(), err)
	}
	return s, nil
}

// startWorker runs a worker on nc, with metrics m (nil: none) and the
// runners rs (none: a new sim's), until the returned stop is called, which
// drains it and returns its error. It returns once the worker is fetching.
func startWorker(ctx context.Context, cfg Config, nc *nats.Conn, settings broker.Settings, m pipeline.Metrics, rs runner.Set) (stop func() error, err error) {
	if rs.Planner == nil {
		rs = runner.SimSet(runner.NewSim(runner.SimOptions{}))
	}
	w, err := worker.New(nc, worker.Config{
		Names:       cfg.Names,
		Queues:      []string{Queue},
		Concurrency: cfg.Concurrency,
		Consumer:    broker.ConsumerSettings{MaxAckPending: max(broker.DefaultMaxAckPending, cfg.Concurrency)},
		Streams:     settings,
		Runners:     rs,
		Pipeline:    pipeline.Config{Worker: WorkerName},
		Metrics:     m,
		Log:         cfg.Log,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: worker: %w", err)
	}
	wctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	stop = func() error {
		cancel()
		if err := <-done; err != nil {
			return fmt.Errorf("bench: worker: %w", err)
		}
		return nil
	}
	select {
	case <-w.Started():
		return stop, nil
	case err := <-done:
		cancel()
		return nil, fmt.Errorf("bench: worker did not start: %w", err)
	case <-ctx.Done():
		_ = stop()
		return nil, ctx.Err()
	}
}

// followed is a follower of the audit stream that records when each of a
// workflow's tasks ended, as a user following the stream sees it: the
// terminal event of task "t<i>" read at end[i]. Its figures are the
// caller's to read once wait has returned.
type followed struct {
	end               []time.Time
	completed, failed int
	ended             chan int      // each task's index as it ends; never full
	finished          chan struct{} // closed when the follower stops, err set
	err               error
	cancel            context.CancelFunc
}

// follow starts following the terminal events of workflow wf's n tasks
// stored after sequence after, until all have ended or ctx ends.
func follow(ctx context.Context, js jetstream.JetStream, names subjects.Names, wf string, after uint64, n int) *followed {
	f := &followed{end: make([]time.Time, n), ended: make(chan int, n), finished: make(chan struct{})}
	ctx, f.cancel = context.WithCancel(ctx)
	go func() {
		defer close(f.finished)
		f.err = producer.FollowTerminal(ctx, js, names, wf, after, func(t producer.Terminal) bool {
			i, ok := TaskIndex(t.Event.TaskID, n)
			if !ok || !f.end[i].IsZero() {
				return true
			}
			f.end[i] = time.Now()
			if t.Event.EventType == subjects.EventTaskCompleted {
				f.completed++
			} else {
				f.failed++
			}
			f.ended <- i
			return f.completed+f.failed < n
		})
	}()
	return f
}

// wait returns once every task has ended, or with the error that stopped
// the follower.
func (f *followed) wait() error {
	<-f.finished
	return f.err
}

// stop stops the follower and waits for it.
func (f *followed) stop() {
	f.cancel()
	_ = f.wait()
}

// timeRun submits n tasks made by req (one workflow's) and times each from
// its submit to its terminal event read from the audit stream, with the
// process's CPU and allocations over the run.
func timeRun(ctx context.Context, cfg Config, js jetstream.JetStream, phase string, n int, req func(int) subjects.TaskRequest) (Phase, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout, ErrTimeout)
	defer cancel()
	after, err := producer.AuditLastSeq(ctx, js, cfg.Names)
	if err != nil {
		return Phase{}, fmt.Errorf("bench: %w", err)
	}
	CollectHeap()
	submit := make([]time.Time, n)
	use := MeasureUsage()
	f := follow(ctx, js, cfg.Names, req(0).Workflow, after, n)
	defer f.stop()
	if err := submitTasks(ctx, cfg, js, submit, req); err != nil {
		return Phase{}, fmt.Errorf("bench: %s: %w", phase, err)
	}
	err = f.wait()
	used := use.Since()
	if err != nil {
		if errors.Is(context.Cause(ctx), ErrTimeout) {
			err = fmt.Errorf("%w after %s with %d of %d tasks ended (raise --timeout)", ErrTimeout, cfg.Timeout, f.completed+f.failed, n)
		}
		return Phase{}, fmt.Errorf("bench: %s: %w", phase, err)
	}
	ph := NewPhase(submit, f.end)
	ph.SetUsage(used, n)
	ph.Completed, ph.Failed = f.completed, f.failed
	return ph, nil
}

// coldScope gives every task of workflow wf a scope of its own, so no
// cache entry can hit.
func coldScope(wf string) func(i int) string {
	return func(i int) string { return fmt.Sprintf("bench %s task %d", wf, i) }
}

// benchRequest is bench task i of workflow wf.
func benchRequest(wf string, i int, scope func(int) string) subjects.TaskRequest {
	return subjects.TaskRequest{ID: "t" + strconv.Itoa(i), Workflow: wf, Scope: scope(i), Verification: "the sim approves"}
}

// ColdRequests makes the cold tasks of workflow wf, each with a scope of
// its own so that no cache entry can hit: what the Drover phase submits.
func ColdRequests(wf string) func(int) subjects.TaskRequest { return benchRequests(wf, coldScope(wf)) }

// benchRequests makes the bench tasks of workflow wf with the scopes of
// scope.
func benchRequests(wf string, scope func(int) string) func(int) subjects.TaskRequest {
	return func(i int) subjects.TaskRequest { return benchRequest(wf, i, scope) }
}

// submitTasks publishes the one-round tasks req makes, one per submit
// slot, with async publishes of producer.Msg, recording each one's submit
// time, and checks every PubAck.
func submitTasks(ctx context.Context, cfg Config, js jetstream.JetStream, submit []time.Time, req func(int) subjects.TaskRequest) error {
	futures := make([]jetstream.PubAckFuture, len(submit))
	for i := range submit {
		msg, err := producer.Msg(cfg.Names, Queue, req(i))
		if err != nil {
			return fmt.Errorf("bench: task %d: %w", i, err)
		}
		submit[i] = time.Now()
		if futures[i], err = js.PublishMsgAsync(msg); err != nil {
			return fmt.Errorf("bench: submit task %d: %w", i, err)
		}
	}
	return CheckAcks(ctx, js, futures)
}

// CheckAcks waits for every async publish and fails on the first error or
// duplicate.
func CheckAcks(ctx context.Context, js jetstream.JetStream, futures []jetstream.PubAckFuture) error {
	select {
	case <-js.PublishAsyncComplete():
	case <-ctx.Done():
		return fmt.Errorf("bench: waiting for publish acks: %w", context.Cause(ctx))
	}
	for i, f := range futures {
		select {
		case ack := <-f.Ok():
			if ack.Duplicate {
				return fmt.Errorf("bench: message %d was stored before (duplicate)", i)
			}
		case err := <-f.Err():
			return fmt.Errorf("bench: publish %d: %w", i, err)
		case <-ctx.Done():
			return fmt.Errorf("bench: waiting for publish ack %d: %w", i, context.Cause(ctx))
		}
	}
	return nil
}

// TaskIndex reads the index from a bench task ID "t<i>".
func TaskIndex(id string, n int) (int, bool) {
	i, err := strconv.Atoi(strings.TrimPrefix(id, "t"))
	return i, err == nil && i >= 0 && i < n && strings.HasPrefix(id, "t")
}
