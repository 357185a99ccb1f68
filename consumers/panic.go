package consumers

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go"

	"github.com/droverhq/drover/subjects"
)

// afterPanic decides what becomes of a message whose handling panicked:
// nothing when the claim went a whole ack wait without a heartbeat (the
// message may be another delivery's now); Term, failing the task, on the
// workers' last allowed delivery (maxDeliver) or past it; otherwise Nak, so
// that it is retried after a delay. Each retry is a delivery, so a message
// that always panics fails after maxDeliver of them, and the rest of the
// queue keeps flowing meanwhile.
func afterPanic(numDelivered uint64, maxDeliver int, stale bool) Action {
	switch {
	case stale:
		return Abandon
	case numDelivered >= uint64(max(maxDeliver, 1)):
		return Term
	}
	return Nak
}

// panicked handles a message whose handler panicked (perr): it logs the
// panic with its stack, counts it, and decides with afterPanic.
func (c *TaskConsumer) panicked(ctx context.Context, d Msg, perr error, stale bool) Outcome {
	c.stats.panics.Add(1)
	c.deps.Metrics.Panicked()
	var stack []byte
	if pe := (*PanicError)(nil); errors.As(perr, &pe) {
		stack = pe.Stack
	}
	act := afterPanic(d.NumDelivered, d.MaxDeliver, stale)
	c.log.Error("handling a message panicked", "stream_seq", d.StreamSeq, "delivery", d.NumDelivered,
		"max_deliver", d.MaxDeliver, "then", act.String(), "err", perr, "stack", string(stack))
	switch act {
	case Abandon:
		return Outcome{Action: Abandon, Err: ErrClaimLost}
	case Nak:
		return Outcome{Action: Nak, Delay: c.backoff(d.NumDelivered), Err: perr}
	}
	return c.poison(ctx, d, perr)
}

// poison fails a task whose handling panicked through its deliveries. The
// handler does it when it can (Poisoner): the task ends with its DLQ entry
// and task_failed. When it cannot, or panics again, the request is copied
// to the DLQ here and the message terminated, so nothing stays behind.
func (c *TaskConsumer) poison(ctx context.Context, d Msg, cause error) Outcome {
	if p, ok := c.deps.Handler.(Poisoner); ok {
		out, perr := guard(func() Outcome { return p.Poison(ctx, d, cause) })
		switch {
		case perr != nil:
			var stack []byte
			if pe := (*PanicError)(nil); errors.As(perr, &pe) {
				stack = pe.Stack
			}
			c.log.Error("failing a poisoned task panicked too; copying the request to the DLQ", "stream_seq", d.StreamSeq, "err", perr, "stack", string(stack))
		case out.Action != Nak:
			return out
		case d.NumDelivered <= uint64(d.MaxDeliver):
			return out // the server allows one more delivery, which fails it again
		default:
			c.log.Error("could not fail a poisoned task on its last delivery; copying the request to the DLQ", "stream_seq", d.StreamSeq, "err", out.Err)
		}
	}
	text := fmt.Sprintf("handling the request panicked on %d deliveries: %v", d.NumDelivered, cause)
	if err := c.deadLetter(ctx, d, subjects.ReasonMaxDeliveries, text); err != nil {
		c.log.Error("could not copy a poisoned request to the DLQ; leaving it in the stream", "stream_seq", d.StreamSeq, "err", err)
		return Outcome{Action: Nak, Delay: c.backoff(d.NumDelivered), Err: err}
	}
	return Outcome{Action: Term, Reason: subjects.ReasonMaxDeliveries, Err: cause}
}

// errNoJetStream: the consumer was given no JetStream to write the DLQ.
var errNoJetStream = errors.New("no JetStream configured for the DLQ")

// deadLetter copies the request to the DLQ, byte for byte, with the
// contract's headers. Its Nats-Msg-Id is the one the handler would have
// used, so it never makes a second entry.
func (c *TaskConsumer) deadLetter(ctx context.Context, d Msg, reason subjects.Reason, text string) error {
	if c.deps.JetStream == nil {
		return errNoJetStream
	}
	names := c.cfg.Names
	if names == (subjects.Names{}) {
		names = subjects.MustNames(subjects.DefaultPrefix)
	}
	wf, task := idsOf(d.Body)
	h := nats.Header{}
	h.Set(subjects.HeaderContract, subjects.ContractVersion)
	h.Set(subjects.HeaderReason, string(reason))
	h.Set(subjects.HeaderError, subjects.HeaderSafe(text, 1024))
	h.Set(subjects.HeaderWorkflow, wf)
	h.Set(subjects.HeaderTask, task)
	h.Set(subjects.HeaderStreamSeq, strconv.FormatUint(d.StreamSeq, 10))
	h.Set(subjects.HeaderDeliveries, strconv.FormatUint(d.NumDelivered, 10))
	h.Set(subjects.HeaderMsgID, subjects.DLQMsgID(d.Queue, d.StreamSeq))
	msg := &nats.Msg{Subject: names.DLQSubject(d.Queue), Header: h, Data: d.Body}
	if _, err := c.deps.JetStream.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("dlq: publish %s: %w", subjects.DLQMsgID(d.Queue, d.StreamSeq), err)
	}
	return nil
}

// idsOf reads the workflow and task tokens of a request body for the DLQ
// headers, "_" for what cannot be read. Decoding may be what panicked, so a
// panic here only leaves them unread.
func idsOf(body []byte) (wf, task string) {
	wf, task = subjects.Reserved, subjects.Reserved
	defer func() { _ = recover() }()
	req, rej := subjects.DecodeTask(body, subjects.Limits{})
	if rej != nil {
		return subjects.IDToken(rej.Workflow), subjects.IDToken(rej.Task)
	}
	return subjects.IDToken(req.Workflow), subjects.IDToken(req.ID)
}
