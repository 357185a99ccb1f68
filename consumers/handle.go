package consumers

import (
	"context"
	"fmt"
	"runtime/debug"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/internal/backoff"
	"github.com/droverhq/drover/internal/redact"
)

// Stats is a snapshot of a consumer's counters; what is done with each
// message goes to Metrics.
type Stats struct {
	// Fetched counts messages started; the watchdog watches it move.
	Fetched int64
	// WatchdogStalls counts stalls the watchdog repaired.
	WatchdogStalls int64
	// Panics counts messages whose handling panicked.
	Panics int64
}

type counters struct {
	fetched, stalls, panics atomic.Int64
}

// Stats returns the consumer's counters.
func (c *TaskConsumer) Stats() Stats {
	return Stats{Fetched: c.stats.fetched.Load(), WatchdogStalls: c.stats.stalls.Load(), Panics: c.stats.panics.Load()}
}

// handle runs one message and applies the handler's decision to it. A panic
// in the handler is recovered: the message is retried with a nak, and once
// its deliveries are spent the task is failed (see panicked).
func (c *TaskConsumer) handle(workCtx context.Context, msg message) {
	md, err := msg.Metadata()
	if err != nil { // not a JetStream message: nothing to ack
		c.log.Error("message without JetStream metadata", "err", err)
		return
	}
	if md.NumDelivered > 1 {
		c.deps.Metrics.Redelivered()
	}
	c.deps.Metrics.InFlight(1)
	defer c.deps.Metrics.InFlight(-1)
	ctx, cancel := context.WithCancelCause(workCtx)
	defer cancel(nil)
	set := c.Settings()
	hb := c.heartbeat(ctx, cancel, msg, set.AckWait)
	d := Msg{
		Queue:        c.cfg.Queue,
		Body:         msg.Data(),
		Header:       msg.Headers(),
		StreamSeq:    md.Sequence.Stream,
		NumDelivered: md.NumDelivered,
		MaxDeliver:   set.MaxDeliver,
		Timestamp:    md.Timestamp,
		Stale:        hb.stale,
	}
	out, perr := guard(func() Outcome { return c.deps.Handler.Handle(ctx, d) })
	for pause := out.Delay; perr == nil && out.Action == Nak && out.RetryInPlace; pause = min(2*pause, max(c.cfg.RetryMax, out.Delay)) {
		if !c.retryInPlace(ctx, workCtx, hb, pause) {
			break
		}
		out, perr = guard(func() Outcome { return c.deps.Handler.Handle(ctx, d) })
	}
	if perr != nil {
		out = c.panicked(ctx, d, perr, hb.stale())
	}
	out = settle(out, hb.stop(), workCtx.Err() != nil)
	c.deps.Metrics.Settled(out.Action.String())
	switch out.Action {
	case Ack:
		err = msg.Ack()
	case Term:
		err = msg.TermWithReason(string(out.Reason))
	case Nak:
		if out.Delay > 0 {
			err = msg.NakWithDelay(out.Delay)
		} else {
			err = msg.Nak()
		}
	case Abandon:
		c.log.Info("claim lost; leaving the message to its new owner", "stream_seq", md.Sequence.Stream, "delivery", md.NumDelivered, "reason", out.Err)
	}
	if err != nil {
		c.log.Warn("could not settle the message", "action", out.Action.String(), "stream_seq", md.Sequence.Stream, "err", err)
	}
}

// retryInPlace waits pause before a delivery is run again in place, and reports
// whether it should be: not once the consumer stops or the claim is stale.
func (c *TaskConsumer) retryInPlace(ctx, workCtx context.Context, hb *beat, pause time.Duration) bool {
	t := time.NewTimer(max(pause, time.Millisecond))
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
		return false
	case <-workCtx.Done():
		return false
	}
	return workCtx.Err() == nil && ctx.Err() == nil && !hb.stale()
}

// settle decides what is sent for a message from its handler's outcome.
// A Nak for a claim that went a whole ack wait without a heartbeat becomes
// Abandon: the message may be another delivery's now, and a nak would hand
// it back under its new owner. A Nak while the consumer stops is sent at
// once, so another worker takes the task without waiting.
func settle(out Outcome, stale, stopping bool) Outcome {
	if out.Action != Nak {
		return out
	}
	if stale {
		return Outcome{Action: Abandon, Err: ErrClaimLost}
	}
	if stopping || out.Delay < 0 {
		out.Delay = 0
	}
	return out
}

// PanicError is a panic recovered from a handler, with its stack.
type PanicError struct {
	Value any
	Stack []byte
}

func (e *PanicError) Error() string {
	const limit = 1 << 10 // the value may carry untrusted text
	return "panic: " + redact.Clip(fmt.Sprint(e.Value), limit, "...(truncated)")
}

// guard runs f, turning a panic into a *PanicError.
func guard(f func() Outcome) (out Outcome, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = &PanicError{Value: r, Stack: debug.Stack()}
		}
	}()
	return f(), nil
}

// backoff is the nak delay after a panic on delivery n.
func (c *TaskConsumer) backoff(n uint64) time.Duration {
	return backoff.Policy{Base: c.cfg.RetryBase, Max: c.cfg.RetryMax}.DelayN(n)
}

// heartbeat starts in-progress acks for msg at a third of ackWait.
func (c *TaskConsumer) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, msg message, ackWait time.Duration) *beat {
	return startBeat(ctx, cancel, ackWait, max(ackWait/3, time.Millisecond), time.Now, func() error {
		if err := msg.InProgress(); err != nil {
			c.log.Warn("heartbeat failed", "err", err)
			return err
		}
		c.deps.Metrics.Heartbeat()
		return nil
	})
}
