package mergequeue

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/workspace"
)

// maxPushTries bounds the rebuilds of one batch because the target moved.
const maxPushTries = 5

// Want is what a merger does with a queue entry, by its task's state.
type Want int

const (
	// WantMerge: the task is parked for the entry; merge it.
	WantMerge Want = iota
	// WantDrop: the task moved on (finished, cancelled, a newer attempt);
	// ack the entry without merging it.
	WantDrop
	// WantLater: the task has not parked for the entry yet (delivery
	// enqueues before it writes the parked state, and a worker may stop in
	// between and deliver again); keep the entry for a later batch.
	WantLater
)

// Sink is what a merger tells the pipeline (the delivery hook).
type Sink interface {
	// Wanted says whether e's task waits for e (parked for this attempt),
	// moved on, or has not parked for it yet.
	Wanted(ctx context.Context, e Entry) (Want, error)
	// Merged completes e's task: commit is the target commit holding it.
	Merged(ctx context.Context, e Entry, target, commit string) error
	// SendBack starts a new attempt of e's task on top of base (the new
	// target head) with feedback (bounded, redacted) for its implementer.
	SendBack(ctx context.Context, e Entry, feedback, base string) error
}

// Stats counts what one merger did.
type Stats struct {
	Sessions, Batches, Pushes, Merged, Skipped, SentBack, Dropped int64
	// Deferred counts entries kept for a later batch because their task
	// had not parked for them yet.
	Deferred int64
}

// Merger runs the merge queue of one target on one worker: it waits for
// the target's lease and, while it holds it, merges batches.
type Merger struct {
	js     jetstream.JetStream
	names  Names
	cfg    Config
	repo   Repo
	sink   Sink
	log    *slog.Logger
	holder string
	red    *redact.Redactor
	cons   jetstream.Consumer
	kv     jetstream.KeyValue
	// landed is the merge log's index of what each batch brought, loaded
	// at the start of each session (only the session's goroutine uses it).
	landed landed

	sessions, batches, pushes, merged, skipped, sentBack, dropped, deferred atomic.Int64
}

// Deps are what a merger works with, handed to it by the worker.
type Deps struct {
	// JS is the JetStream context of the queue, the lease and the merge
	// log; required.
	JS jetstream.JetStream
	// Names names the queue's stream, consumer and bucket; required.
	Names Names
	// Repo is the repository merges are built in and pushed from;
	// required.
	Repo Repo
	// Sink is told what became of each entry; required.
	Sink Sink
	// Holder names this merger in the lease and the merge log, unique in
	// the fleet (e.g. the worker's id); required.
	Holder string
	// Redactor masks the feedback sent back to implementers; nil masks
	// nothing.
	Redactor *redact.Redactor
	// Log is the merger's logger; nil discards.
	Log *slog.Logger
}

// validate names the first missing dependency.
func (d Deps) validate() error {
	switch {
	case d.JS == nil:
		return errors.New("mergequeue: Deps.JS is required")
	case d.Names.prefix == "":
		return errors.New("mergequeue: Deps.Names is required")
	case d.Repo == nil:
		return errors.New("mergequeue: Deps.Repo is required")
	case d.Sink == nil:
		return errors.New("mergequeue: Deps.Sink is required")
	case d.Holder == "":
		return errors.New("mergequeue: Deps.Holder is required")
	}
	return nil
}

// New validates deps and cfg, provisions the queue and returns a merger.
func New(ctx context.Context, deps Deps, cfg Config) (*Merger, error) {
	if err := deps.validate(); err != nil {
		return nil, err
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg = cfg.WithDefaults()
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cons, kv, err := Provision(ctx, deps.JS, deps.Names, cfg)
	if err != nil {
		return nil, err
	}
	return &Merger{js: deps.JS, names: deps.Names, cfg: cfg, repo: deps.Repo, sink: deps.Sink, holder: deps.Holder,
		red: deps.Redactor, cons: cons, kv: kv, log: log.With("component", "mergequeue", "target", cfg.Target)}, nil
}

// Stats returns the counters.
func (m *Merger) Stats() Stats {
	return Stats{Sessions: m.sessions.Load(), Batches: m.batches.Load(), Pushes: m.pushes.Load(),
		Merged: m.merged.Load(), Skipped: m.skipped.Load(), SentBack: m.sentBack.Load(), Dropped: m.dropped.Load(),
		Deferred: m.deferred.Load()}
}

// poll is how often a waiting merger tries the lease, and how long a
// holder's fetch waits.
func (m *Merger) poll() time.Duration { return min(m.cfg.LeaseTTL/4, 2*time.Second) }

// Run waits for the target's lease and merges while it holds it, until ctx
// ends; it then lets the lease go.
func (m *Merger) Run(ctx context.Context) error {
	t := time.NewTimer(0)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
		l, ok, err := acquire(ctx, m.kv, LeaseKey(m.cfg.Target), m.holder)
		if err != nil {
			m.log.Warn("lease", "err", err)
		}
		if ok {
			m.session(ctx, l)
		}
		t.Reset(m.poll())
	}
}

type item struct {
	e        Entry
	msg      jetstream.Msg
	dup      bool // another message of the batch has the same key
	unwanted bool // its task no longer waits for it
}

// batch merges one fetched batch and answers each message.
func (m *Merger) batch(ctx context.Context, msgs []jetstream.Msg, renew func() error) error {
	var items []*item
	seen := map[string]bool{}
	for _, msg := range msgs {
		var e Entry
		if err := json.Unmarshal(msg.Data(), &e); err != nil || e.Validate() != nil || e.Target != m.cfg.Target {
			m.log.Warn("dropping an invalid queue entry", "subject", msg.Subject())
			_ = msg.Term()
			continue
		}
		items = append(items, &item{e: e, msg: msg, dup: seen[e.Key()]})
		seen[e.Key()] = true
	}
	stop := m.keepInProgress(ctx, msgs)
	defer stop()
	var ready []*item
	for i, it := range items {
		want, err := m.sink.Wanted(ctx, it.e)
		if err != nil {
			for _, it := range items[i:] {
				_ = it.msg.NakWithDelay(time.Second)
			}
			for _, it := range ready {
				_ = it.msg.NakWithDelay(time.Second)
			}
			return err
		}
		if want == WantLater {
			m.deferred.Add(1)
			_ = it.msg.NakWithDelay(m.poll())
			continue
		}
		it.unwanted = want == WantDrop
		ready = append(ready, it)
	}
	items = ready
	if len(items) == 0 {
		return nil
	}
	err := m.merge(ctx, items, renew)
	if err != nil {
		for _, it := range items {
			_ = it.msg.NakWithDelay(time.Second)
		}
	}
	return err
}

// merge brings items onto the target with one push, retrying when the
// target moved, and tells the sink.
func (m *Merger) merge(ctx context.Context, items []*item, renew func() error) error {
	for try := 0; try < maxPushTries; try++ {
		base, err := m.repo.TargetHead(ctx, m.cfg.Target)
		if err != nil {
			return err
		}
		var todo []Entry
		var skip []*item
		for _, it := range items {
			if it.dup || it.unwanted {
				continue
			}
			switch {
			case m.onTarget(ctx, base, it.e):
				skip = append(skip, it)
			default:
				todo = append(todo, it.e)
			}
		}
		head, good, bad := base, []Entry(nil), []culprit(nil)
		if len(todo) > 0 {
			tree, err := m.repo.Scratch(ctx, base)
			if err != nil {
				return err
			}
			b := &builder{tree: tree, check: m.cfg.Check, rebase: m.cfg.Strategy == StrategyRebase}
			head, good, bad, err = b.fit(ctx, base, todo)
			tree.Close(ctx)
			if err != nil {
				return err
			}
		}
		if len(good) > 0 {
			if err := renew(); err != nil {
				return err
			}
			// Recorded before the push: a merger that dies after the push
			// and before the batch record still leaves what it pushed.
			keys := make([]string, len(good))
			for i, e := range good {
				keys[i] = e.Key()
			}
			m.landed.add(head, keys)
			m.record(ctx, LogRecord{Kind: LogPush, Before: base, Commit: head, Merged: keys})
			err := m.repo.PushTarget(ctx, m.cfg.Target, base, head)
			if errors.Is(err, workspace.ErrTargetMoved) {
				m.log.Info("target moved during the batch, building it again", "try", try+1)
				continue
			}
			if err != nil {
				return err
			}
			m.pushes.Add(1)
		}
		m.batches.Add(1)
		m.answer(ctx, items, skip, good, bad, base, head)
		return nil
	}
	return fmt.Errorf("mergequeue: %s moved %d times during one batch", m.cfg.Target, maxPushTries)
}

// answer tells the sink about every entry and acks (or, when the sink
// failed, naks) its message.
func (m *Merger) answer(ctx context.Context, items, skip []*item, good []Entry, bad []culprit, base, head string) {
	rec := LogRecord{Kind: LogBatch, Before: base, Commit: head}
	outcome := map[string]error{}
	for _, it := range items {
		if it.unwanted && !it.dup {
			rec.Dropped = append(rec.Dropped, it.e.Key())
			m.dropped.Add(1)
		}
	}
	for _, it := range skip {
		rec.Skipped = append(rec.Skipped, it.e.Key())
		m.skipped.Add(1) // counted before the sink hears of it: a stat never lags the event
		outcome[it.e.Key()] = m.sink.Merged(ctx, it.e, m.cfg.Target, base)
	}
	for _, e := range good {
		rec.Merged = append(rec.Merged, e.Key())
		m.merged.Add(1)
		outcome[e.Key()] = m.sink.Merged(ctx, e, m.cfg.Target, head)
	}
	for _, c := range bad {
		rec.Back = append(rec.Back, c.entry.Key())
		if err := m.repo.DeleteBranch(ctx, c.entry.Branch, c.entry.Head); err != nil {
			m.log.Warn("deleting a sent-back branch", "branch", c.entry.Branch, "err", err)
		}
		m.sentBack.Add(1)
		outcome[c.entry.Key()] = m.sink.SendBack(ctx, c.entry, m.feedback(c, head), head)
	}
	m.record(ctx, rec)
	for _, it := range items {
		if err := outcome[it.e.Key()]; err != nil {
			m.log.Warn("delivery hook", "workflow", it.e.Workflow, "task", it.e.Task, "err", err)
			_ = it.msg.NakWithDelay(time.Second)
			continue
		}
		_ = it.msg.Ack()
	}
}

// feedback is what a culprit's implementer reads: bounded and redacted.
func (m *Merger) feedback(c culprit, head string) string {
	var what string
	if c.reason == "conflict" {
		what = "conflicts with the changes merged before it"
	} else {
		what = fmt.Sprintf("fails the merge check (%s) once merged", m.cfg.Check.Argv[0])
	}
	text := fmt.Sprintf("Merge queue: branch %s (head %s) %s onto %s. Your next attempt starts from the new %s head %s; resolve this there.\n\n%s",
		c.entry.Branch, short(c.entry.Head), what, m.cfg.Target, m.cfg.Target, short(head), c.output)
	text = m.red.String(redact.Terminal(text))
	return redact.Clip(text, m.cfg.MaxFeedback, "\n[cut]")
}

func short(sha string) string { return sha[:min(len(sha), 12)] }
