package pipeline

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

var (
	// errLost: another delivery owns the task now.
	errLost = errors.New("claim lost to another delivery")
	// errCreateConflict: the state appeared while this delivery ran
	// without one; the claim must be decided again.
	errCreateConflict = errors.New("task state created concurrently")
)

// commit writes the task's next state by compare-and-set, with items as its
// outbox, then publishes the items.
func (p *Pipeline) commit(ctx context.Context, t *taskRun, mutate func(*subjects.TaskState), items ...subjects.OutboxItem) error {
	ctx, cancel := boundCalls(ctx, t.commitCalls(len(items)))
	defer cancel()
	if err := p.commitState(ctx, t, mutate, items); err != nil {
		return err
	}
	return p.flush(ctx, t, 0)
}

// commitAhead is commit for a change the task goes on from: its outbox is
// published while the next role runs, and the task's next state write waits
// for that (joinFlush), so the record keeps its order and a change is never
// written over an outbox that is not out yet.
func (p *Pipeline) commitAhead(ctx context.Context, t *taskRun, mutate func(*subjects.TaskState), items ...subjects.OutboxItem) error {
	ctx, cancel := boundCalls(ctx, t.commitCalls(len(items)))
	if err := p.commitState(ctx, t, mutate, items); err != nil {
		cancel()
		return err
	}
	done := make(chan error, 1)
	go func() {
		defer cancel()
		done <- p.flush(ctx, t, 0)
	}()
	t.flushing = done
	return nil
}

// commitCalls is how many calls' time a commit of items needs, one after
// another: its state write; an event for each of the items, the deferred
// ones and, for the write that creates the state, task_accepted, which the
// write puts before them; and the cache writes it waits for in between
// (putSettleTimeout, two calls' time).
func (t *taskRun) commitCalls(items int) int {
	n := 1 + items + len(t.deferred) + 2
	if t.rev == 0 {
		n++
	}
	return n
}

// callTimeout is the bound jetstream gives one call whose context has no
// deadline (its default timeout).
const callTimeout = 5 * time.Second

// boundCalls bounds the n store calls a commit makes one after another
// (its state write, then its events) by one deadline, n times the bound
// jetstream gives each call when its context has none: one timer and one
// child of the task's context for the commit instead of one per call (a
// cold task's two commits made seven; contexts and timers took about 40 µs
// of a bench task's CPU). A context that has a deadline already is kept.
func boundCalls(ctx context.Context, n int) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, time.Duration(max(n, 1))*callTimeout)
}

// commitState writes the next state, then waits for the cache writes in
// flight: they went out before the state write, so this rarely waits, and
// a result is in the cache before an event says its role is done.
func (p *Pipeline) commitState(ctx context.Context, t *taskRun, mutate func(*subjects.TaskState), items []subjects.OutboxItem) error {
	if _, err := p.casState(ctx, t, mutate, items); err != nil {
		if errors.Is(err, state.ErrConflict) {
			return errLost
		}
		return err
	}
	afterCommit()
	p.settlePuts(ctx, t)
	return nil
}

// joinFlush waits for the outbox being published behind the task's last
// write (commitAhead) and returns how that went.
func (t *taskRun) joinFlush() error {
	if t.flushing != nil {
		t.flushErr, t.flushing = <-t.flushing, nil
	}
	err := t.flushErr
	t.flushErr = nil
	return err
}

// flushLost reports, without waiting, whether the outbox published behind
// the last write has already found the claim lost.
func (t *taskRun) flushLost() bool {
	if t.flushing != nil {
		select {
		case t.flushErr = <-t.flushing:
			t.flushing = nil
		default:
		}
	}
	return errors.Is(t.flushErr, errLost)
}

// casState writes the next state; ErrConflict (update) or errCreateConflict
// (create) when it lost. It first waits for the last write's outbox.
func (p *Pipeline) casState(ctx context.Context, t *taskRun, mutate func(*subjects.TaskState), items []subjects.OutboxItem) (state.Task, error) {
	if err := t.joinFlush(); err != nil {
		return state.Task{}, err
	}
	if len(t.deferred) > 0 {
		items = append(slices.Clip(t.deferred), items...)
	}
	if t.rev == 0 {
		// The write that creates the state opens the task's record.
		accepted, err := p.acceptedEvent(ctx, t)
		if err != nil {
			return state.Task{}, err
		}
		items = append([]subjects.OutboxItem{accepted}, items...)
	}
	next := t.nextState()
	if mutate != nil {
		mutate(&next)
	}
	if next.Workspace == nil && t.wsPin != nil {
		next.Workspace = t.wsPin // pinned by the write that goes on from it
	}
	next.Outbox = items
	next.Worker = p.cfg.Worker
	next.Delivery = t.d.NumDelivered
	next.UpdatedAt = p.cfg.Now().UTC()
	var (
		st  state.Task
		err error
	)
	if t.rev == 0 {
		st, err = p.d.State.CreateTask(ctx, next)
		if errors.Is(err, state.ErrConflict) {
			return st, errCreateConflict
		}
	} else {
		st, err = p.d.State.UpdateTask(ctx, next, t.rev)
	}
	if err != nil {
		return st, err
	}
	t.st, t.rev, t.deferred = st.TaskState, st.Revision, nil
	return st, nil
}

// flush publishes the state's outbox. from is the first item known to be
// unpublished; -1 means it must be found from the task's last audit event.
// Every event is fenced on the task's last audit sequence. A fence that
// fails is examined: if the state is still ours, the intruder was a foreign
// event (a rejected duplicate request) or an item a stalled owner already
// wrote, and publishing goes on from there; otherwise the claim is lost.
func (p *Pipeline) flush(ctx context.Context, t *taskRun, from int) error {
	items := t.st.Outbox
	if len(items) == 0 {
		return nil
	}
	i := from
	if i < 0 {
		next, err := p.resync(ctx, t, items)
		if err != nil {
			return err
		}
		i = next
	}
	for resyncs := 0; i < len(items); {
		it := items[i]
		if it.DLQ != nil {
			if err := p.publishDLQ(ctx, t.d, it.DLQ.Reason, it.DLQ.Error, t.req.Workflow, t.req.ID); err != nil {
				return err
			}
			i++
			continue
		}
		start := time.Now()
		ack, err := p.d.Publisher.Publish(ctx, it.Event, t.traceparent, true, t.lastSeq)
		switch decidePublish(err, ack.Duplicate) {
		case fenceNext:
			p.d.Metrics.AuditPublished(time.Since(start))
			t.lastSeq = ack.Seq
			i++
			continue
		case fenceError:
			return err
		}
		resyncs++
		cur, gerr := p.d.State.GetTask(ctx, t.req.Workflow, t.req.ID)
		if gerr != nil {
			return gerr
		}
		switch decideFence(resyncs, cur.Revision, t.rev) {
		case fenceGiveUp:
			return fmt.Errorf("audit: %s/%s: fence kept failing", t.req.Workflow, t.req.ID)
		case fenceLost:
			return errLost
		}
		next, rerr := p.resync(ctx, t, items)
		if rerr != nil {
			return rerr
		}
		i = max(i, next)
	}
	return nil
}

// resync reads the task's last audit event and returns the index of the
// first outbox item after it (0 when it is none of them).
func (p *Pipeline) resync(ctx context.Context, t *taskRun, items []subjects.OutboxItem) (int, error) {
	seq, id, err := p.d.Publisher.LastSeq(ctx, p.d.Audit, t.req.Workflow, t.req.ID)
	if err != nil {
		return 0, err
	}
	t.lastSeq = seq
	idx := slices.IndexFunc(items, func(it subjects.OutboxItem) bool {
		return it.Event != nil && it.Event.ID == id
	})
	return idx + 1, nil
}

// publishDLQ writes the request's DLQ entry: its body byte for byte, with
// the reason headers. Its Nats-Msg-Id makes a repeated write store once.
func (p *Pipeline) publishDLQ(ctx context.Context, d consumers.Msg, reason subjects.Reason, text, workflow, task string) error {
	h := nats.Header{}
	h.Set(subjects.HeaderContract, subjects.ContractVersion)
	h.Set(subjects.HeaderReason, string(reason))
	h.Set(subjects.HeaderError, subjects.HeaderSafe(text, 1024))
	h.Set(subjects.HeaderWorkflow, subjects.IDToken(workflow))
	h.Set(subjects.HeaderTask, subjects.IDToken(task))
	h.Set(subjects.HeaderStreamSeq, strconv.FormatUint(d.StreamSeq, 10))
	h.Set(subjects.HeaderDeliveries, strconv.FormatUint(d.NumDelivered, 10))
	h.Set(subjects.HeaderMsgID, subjects.DLQMsgID(d.Queue, d.StreamSeq))
	if tp := traceparentOf(d); tp != "" {
		h[subjects.HeaderTraceparent] = []string{tp}
	}
	body := fitDLQBody(d.Body, h, p.d.JS.Conn().MaxPayload())
	msg := &nats.Msg{Subject: p.d.Names.DLQSubject(d.Queue), Header: h, Data: body}
	ack, err := p.d.JS.PublishMsg(ctx, msg)
	if err != nil {
		return fmt.Errorf("dlq: publish %s: %w", subjects.DLQMsgID(d.Queue, d.StreamSeq), err)
	}
	if !ack.Duplicate {
		p.d.Metrics.DLQWritten(reason)
	}
	afterDLQ()
	return nil
}

// errOutcome maps a commit or flush error to what to do with the message.
func (p *Pipeline) errOutcome(t *taskRun, err error) consumers.Outcome {
	if errors.Is(err, errLost) || errors.Is(err, errCreateConflict) {
		return consumers.Outcome{Action: consumers.Abandon, Err: err}
	}
	return p.nakOutcome(p.taskLog(t, ""), t.d, err)
}

// nakOutcome retries the delivery later, after an infrastructure error;
// log is the task's logger (taskLog or requestLog).
func (p *Pipeline) nakOutcome(log *slog.Logger, d consumers.Msg, err error) consumers.Outcome {
	log.Warn("task delivery failed; retrying", "err", err)
	return consumers.Outcome{Action: consumers.Nak, Delay: p.backoff(d.NumDelivered), Err: err, RetryInPlace: serverFault(err)}
}
