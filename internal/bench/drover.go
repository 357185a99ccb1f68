package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
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
	ncW, err := connect(url, "worker", cfg.Options)
	if err != nil {
		return err
	}
	defer ncW.Close()
	ncP, err := connect(url, "producer", cfg.Options)
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
// tasks submitted as fast as the server acknowledges them, and each task
// timed to its terminal event.
func runDrover(ctx context.Context, cfg Config, url string) (ph Phase, w Writes, err error) {
	err = withOwn(ctx, cfg, url, func(o own) error {
		streams := writeStreams(cfg.Names)
		before, err := lastSeqs(ctx, o.js, streams)
		if err != nil {
			return err
		}
		tr := newTerminals(newWorkflowID(), cfg.Tasks)
		stop, err := startWorker(ctx, cfg, o.ncW, o.settings, nil, pipeline.Config{OnTerminal: tr.record}, runner.Set{})
		if err != nil {
			return err
		}
		ph, err = measureDrover(ctx, cfg, o.js, tr)
		if serr := stop(); serr != nil && err == nil {
			err = serr
		}
		if err != nil {
			return err
		}
		after, err := lastSeqs(ctx, o.js, streams)
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

// startWorker runs a worker on nc, with the pipeline's hooks of pc,
// metrics m (nil: none) and the runners rs (none: a new sim's), until the
// returned stop is called, which drains it and returns its error. It
// returns once the worker is fetching.
func startWorker(ctx context.Context, cfg Config, nc *nats.Conn, settings broker.Settings, m pipeline.Metrics, pc pipeline.Config, rs runner.Set) (stop func() error, err error) {
	pc.Worker = benchWorker
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
		Pipeline:    pc,
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

// terminals records when each bench task ended: when the worker had written
// its terminal event, the point where the floor's handler records its own.
type terminals struct {
	wf                string
	mu                sync.Mutex
	end               []time.Time
	completed, failed int
	all               chan struct{}
}

func newTerminals(wf string, n int) *terminals {
	return &terminals{wf: wf, end: make([]time.Time, n), all: make(chan struct{})}
}

func (tr *terminals) record(wf, task string, et subjects.EventType) {
	now := time.Now()
	i, ok := taskIndex(task, len(tr.end))
	if wf != tr.wf || !ok {
		return
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	if !tr.end[i].IsZero() {
		return
	}
	tr.end[i] = now
	if et == subjects.EventTaskCompleted {
		tr.completed++
	} else {
		tr.failed++
	}
	if tr.completed+tr.failed == len(tr.end) {
		close(tr.all)
	}
}

// measureDrover submits the tasks and times each to its terminal event,
// under a CPU profile when one is asked for; then, untimed, it checks that
// the audit stream holds a terminal event of every task.
func measureDrover(ctx context.Context, cfg Config, js jetstream.JetStream, tr *terminals) (Phase, error) {
	ctx, cancel := context.WithTimeoutCause(ctx, cfg.Timeout, errTimeout)
	defer cancel()
	after, err := producer.AuditLastSeq(ctx, js, cfg.Names)
	if err != nil {
		return Phase{}, fmt.Errorf("bench: %w", err)
	}
	timeout := func(err error, what string) error {
		if c := context.Cause(ctx); errors.Is(c, errTimeout) {
			return fmt.Errorf("%w after %s %s (raise --timeout)", errTimeout, cfg.Timeout, what)
		}
		return err
	}
	collectHeap()
	stopProfile, err := startProfile(cfg, cfg.CPUProfile, "drover")
	if err != nil {
		return Phase{}, err
	}
	n := cfg.Tasks
	submit := make([]time.Time, n)
	use := measure()
	err = submitTasks(ctx, cfg, js, submit, benchRequests(tr.wf, coldScope(tr.wf)))
	if err == nil {
		select {
		case <-tr.all:
		case <-ctx.Done():
			tr.mu.Lock()
			err = timeout(ctx.Err(), fmt.Sprintf("with %d of %d tasks ended", tr.completed+tr.failed, n))
			tr.mu.Unlock()
		}
	}
	used := use.since()
	if perr := stopProfile(); perr != nil && err == nil {
		err = fmt.Errorf("cpu profile: %w", perr)
	}
	if cfg.MemProfile != nil {
		if err := pprof.Lookup("allocs").WriteTo(cfg.MemProfile, 0); err != nil {
			return Phase{}, fmt.Errorf("bench: allocation profile: %w", err)
		}
	}
	if err != nil {
		return Phase{}, fmt.Errorf("bench: drover phase: %w", err)
	}
	seen := make([]bool, n)
	found := 0
	err = producer.FollowTerminal(ctx, js, cfg.Names, tr.wf, after, func(t producer.Terminal) bool {
		if i, ok := taskIndex(t.Event.TaskID, n); ok && !seen[i] {
			seen[i] = true
			found++
		}
		return found < n
	})
	if err != nil {
		return Phase{}, fmt.Errorf("bench: drover phase: checking the audit stream: %w", timeout(err, fmt.Sprintf("with terminal events of %d of %d tasks found", found, n)))
	}
	tr.mu.Lock()
	defer tr.mu.Unlock()
	ph := newPhase(submit, tr.end)
	ph.setUsage(used, n)
	ph.Completed, ph.Failed = tr.completed, tr.failed
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
	return checkAcks(ctx, js, futures)
}

// checkAcks waits for every async publish and fails on the first error or
// duplicate.
func checkAcks(ctx context.Context, js jetstream.JetStream, futures []jetstream.PubAckFuture) error {
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

// taskIndex reads the index from a bench task ID "t<i>".
func taskIndex(id string, n int) (int, bool) {
	i, err := strconv.Atoi(strings.TrimPrefix(id, "t"))
	return i, err == nil && i >= 0 && i < n && strings.HasPrefix(id, "t")
}
