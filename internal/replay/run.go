package replay

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// ErrTargetUsed is returned when the re-run's workflow already has events:
// a re-run always starts a fresh record.
var ErrTargetUsed = errors.New("the re-run's workflow already has a record")

// Options configure a re-run.
type Options struct {
	// Source is the recorded workflow; As is the re-run's own workflow
	// (default "<source>-replay-<unix time>").
	Source, As string
	// Role, when set, makes the re-run a counterfactual: that role runs
	// again with Live; every other role is served from the record. Empty:
	// a replay, every role served from the record.
	Role subjects.Role
	Live runner.Runner
	// LiveCached lets the counterfactual role use the cache (its runner's
	// identity is in the key, so a hit is the same runner's answer).
	LiveCached bool
	// Tasks, Limit and Since select a sample: only these task IDs, at most
	// Limit tasks (0: all), only tasks accepted at or after Since.
	Tasks []string
	Limit int
	Since time.Time
	// Worker is the base of the in-process worker's configuration (names,
	// stream settings, concurrency, consumer settings, and the fleet's
	// workspace block, with a directory of the re-run's own); the re-run
	// sets its queue, runners and lessons, and, with workspaces, turns
	// pushing off, names its branches from its own workflow and pins the
	// base the recorded changes were made on.
	Worker worker.Config
	// Expander expands recorded blob references (nil: none).
	Expander Expander
	// Timeout bounds the wait for the re-run's tasks (default 30m).
	Timeout time.Duration
	Log     *slog.Logger
}

// Run re-runs the selected tasks of opts.Source under opts.As on a worker
// of its own, in process, consuming a queue of its own, and reports how the
// re-run compares with the record.
func Run(ctx context.Context, nc *nats.Conn, opts Options) (*Report, error) {
	if opts.Role != "" && (!opts.Role.Valid() || opts.Live == nil) {
		return nil, fmt.Errorf("counterfactual role %q: want planner, implementer or judge, with a runner", opts.Role)
	}
	if opts.As == "" {
		opts.As = fmt.Sprintf("%s-replay-%d", opts.Source, time.Now().Unix())
	}
	if err := subjects.ValidateID(opts.As); err != nil {
		return nil, fmt.Errorf("re-run workflow %q: %w", opts.As, err)
	}
	if opts.Timeout <= 0 {
		opts.Timeout = 30 * time.Minute
	}
	if opts.Log == nil {
		opts.Log = slog.Default()
	}
	names := opts.Worker.Names
	if names == (subjects.Names{}) {
		names = subjects.MustNames(subjects.DefaultPrefix)
		opts.Worker.Names = names
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	rec, err := Load(ctx, js, names, opts.Source, opts.Expander)
	if err != nil {
		return nil, fmt.Errorf("record of %s: %w", opts.Source, err)
	}
	ids := sample(rec, opts)
	if len(ids) == 0 {
		return nil, fmt.Errorf("%s: %w to re-run (of %d recorded)", opts.Source, ErrNoRecord, len(rec.Order))
	}
	if seq, err := lastEventOf(ctx, js, names, opts.As); err != nil {
		return nil, err
	} else if seq > 0 {
		return nil, fmt.Errorf("%s: %w (last event %d)", opts.As, ErrTargetUsed, seq)
	}

	recorded := NewRecorded(rec)
	set := runner.Set{Planner: recorded, Implementer: recorded, Judge: recorded}
	set.NoCache = runner.RoleFlags{Planner: true, Implementer: true, Judge: true}
	var live *Live
	marks := map[string]string{MetaReplayOf: opts.Source}
	if opts.Role != "" {
		live = NewLive(opts.Live)
		switch opts.Role {
		case subjects.RolePlanner:
			set.Planner = live
		case subjects.RoleImplementer:
			set.Implementer = live
		case subjects.RoleJudge:
			set.Judge = live
		}
		set.NoCache.Set(opts.Role, !opts.LiveCached)
		marks = map[string]string{MetaCounterfactualOf: opts.Source, MetaCounterfactualRole: string(opts.Role)}
	}

	queue := QueueOf(opts.As)
	wc := opts.Worker
	wc.Queues = []string{queue}
	wc.Runners = set
	wc.Lessons = noLessons{}
	wc.Log = opts.Log
	if wc.Workspace, err = replayWorkspace(ctx, wc.Workspace, rec, ids, opts.Expander); err != nil {
		return nil, fmt.Errorf("%s: workspace: %w", opts.Source, err)
	}
	if !wc.Workspace.Enabled() && hasChanges(rec, ids) {
		opts.Log.Warn("the record has workspace changes but the re-run has no workspace configuration: no worktree gets them, and a judge sees no diff",
			"workflow", opts.Source)
	}
	// A recorded failure fails again at once: no backoff worth waiting.
	wc.Pipeline.RetryBase, wc.Pipeline.RetryMax = 10*time.Millisecond, 100*time.Millisecond
	if wc.Watchdog == 0 {
		wc.Watchdog = -1
	}
	w, err := worker.New(nc, wc)
	if err != nil {
		return nil, err
	}
	wctx, stop := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan error, 1)
	go func() { done <- w.Run(wctx) }()
	finished := false
	defer func() {
		stop()
		if err := <-done; err != nil {
			opts.Log.Warn("re-run worker", "err", err)
		}
		deleteConsumer(js, names, queue, !finished, opts.Log)
	}()
	select {
	case <-w.Started():
	case err := <-done:
		done <- err
		return nil, fmt.Errorf("re-run worker: %w", err)
	case <-ctx.Done():
		return nil, ctx.Err()
	}

	started := time.Now()
	after, err := producer.AuditLastSeq(ctx, js, names)
	if err != nil {
		return nil, err
	}
	for _, id := range ids {
		req := marked(rec.Tasks[id].Request, opts.As, marks)
		if _, err := producer.Publish(ctx, js, names, queue, req); err != nil {
			return nil, err
		}
	}
	fctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	left := map[string]bool{}
	for _, id := range ids {
		left[id] = true
	}
	err = producer.FollowTerminal(fctx, js, names, opts.As, after, func(tm producer.Terminal) bool {
		delete(left, tm.Event.TaskID)
		return len(left) > 0
	})
	if err != nil {
		return nil, fmt.Errorf("waiting for %d of %d re-run tasks: %w", len(left), len(ids), err)
	}
	finished = true
	elapsed := time.Since(started)
	again, err := Load(ctx, js, names, opts.As, opts.Expander)
	if err != nil {
		return nil, fmt.Errorf("record of %s: %w", opts.As, err)
	}
	rep := compare(rec, again, ids, opts.Role)
	rep.Elapsed = elapsed
	rep.Served = recorded.Served()
	rep.Diverged = recorded.Diverged()
	if live != nil {
		rep.LiveCalls = live.Calls()
	}
	return rep, nil
}

// QueueOf is the queue a re-run's requests go to: one of its own, so no
// worker of the fleet takes them.
func QueueOf(as string) string {
	h := sha256.Sum256([]byte(as))
	return "replay-" + hex.EncodeToString(h[:8])
}

// sample picks the tasks to re-run, in the order they were accepted.
func sample(rec *Record, opts Options) []string {
	var ids []string
	for _, id := range rec.Order {
		t := rec.Tasks[id]
		if len(opts.Tasks) > 0 && !slices.Contains(opts.Tasks, id) {
			continue
		}
		if !opts.Since.IsZero() && t.Accepted.Before(opts.Since) {
			continue
		}
		if opts.Limit > 0 && len(ids) >= opts.Limit {
			break
		}
		ids = append(ids, id)
	}
	return ids
}

// lastEventOf returns the sequence of workflow's last audit event (0: none).
func lastEventOf(ctx context.Context, js jetstream.JetStream, names subjects.Names, wf string) (uint64, error) {
	s, err := js.Stream(ctx, names.AuditStream())
	if err != nil {
		return 0, fmt.Errorf("audit stream %s: %w", names.AuditStream(), err)
	}
	m, err := s.GetLastMsgForSubject(ctx, names.AuditFilter(wf, "", "", ""))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return m.Sequence, nil
}

// deleteConsumer removes the re-run queue's consumer, and, when the re-run
// was interrupted, the requests it left on the queue (which needs the
// right to purge the task stream): the queue is used once.
func deleteConsumer(js jetstream.JetStream, names subjects.Names, queue string, interrupted bool, log *slog.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := js.DeleteConsumer(ctx, names.TasksStream(), names.Consumer(queue)); err != nil && !errors.Is(err, jetstream.ErrConsumerNotFound) {
		log.Warn("re-run queue consumer not deleted", "consumer", names.Consumer(queue), "err", err)
	}
	if !interrupted {
		return
	}
	st, err := js.Stream(ctx, names.TasksStream())
	if err == nil {
		err = st.Purge(ctx, jetstream.WithPurgeSubject(names.TaskSubject(queue)))
	}
	if err != nil {
		log.Warn("re-run queue not purged", "queue", queue, "err", err)
	}
}

// noLessons records and recalls nothing: a re-run leaves the lessons of
// the fleet alone.
type noLessons struct{}

func (noLessons) Record(context.Context, subjects.Lesson)         {}
func (noLessons) Recent(context.Context, string, string) []string { return nil }
