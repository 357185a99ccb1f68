package consumers

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/pipeline"
)

// Stats counts what the consumer did with messages.
type Stats struct {
	Fetched     atomic.Int64
	Acked       atomic.Int64
	Termed      atomic.Int64
	Naked       atomic.Int64
	Abandoned   atomic.Int64
	Redelivered atomic.Int64
	Heartbeats  atomic.Int64
	// WatchdogStalls counts stalls the watchdog repaired; WatchdogFull
	// counts checks that found max ack pending reached.
	WatchdogStalls atomic.Int64
	WatchdogFull   atomic.Int64
}

// Stats returns the consumer's counters.
func (c *TaskConsumer) Stats() *Stats { return &c.stats }

// handle runs one message and applies the pipeline's decision to it.
func (c *TaskConsumer) handle(workCtx context.Context, msg jetstream.Msg) {
	md, err := msg.Metadata()
	if err != nil { // not a JetStream message: nothing to ack
		c.log.Error("message without JetStream metadata", "err", err)
		return
	}
	if md.NumDelivered > 1 {
		c.stats.Redelivered.Add(1)
	}
	ctx, cancel := context.WithCancelCause(workCtx)
	defer cancel(nil)
	stop := c.heartbeat(ctx, cancel, msg)
	out := c.h.Handle(ctx, pipeline.Delivery{
		Queue:        c.cfg.Queue,
		Body:         msg.Data(),
		Header:       msg.Headers(),
		StreamSeq:    md.Sequence.Stream,
		NumDelivered: md.NumDelivered,
	})
	stop()
	switch out.Action {
	case pipeline.Ack:
		c.stats.Acked.Add(1)
		err = msg.Ack()
	case pipeline.Term:
		c.stats.Termed.Add(1)
		err = msg.TermWithReason(string(out.Reason))
	case pipeline.Nak:
		c.stats.Naked.Add(1)
		if workCtx.Err() != nil || out.Delay <= 0 {
			err = msg.Nak() // stopping: hand it back at once
		} else {
			err = msg.NakWithDelay(out.Delay)
		}
	case pipeline.Abandon:
		c.stats.Abandoned.Add(1)
		c.log.Info("claim lost; leaving the message to its new owner", "stream_seq", md.Sequence.Stream, "delivery", md.NumDelivered, "reason", out.Err)
	}
	if err != nil {
		c.log.Warn("could not settle the message", "action", out.Action.String(), "stream_seq", md.Sequence.Stream, "err", err)
	}
}

// heartbeat keeps the claim with in-progress acks at a third of the ack
// wait. If the worker could not beat for a whole ack wait (it was stopped or
// starved), the server has handed the message on: the task's context is
// cancelled with pipeline.ErrClaimLost and no further beat is sent. The
// returned stop waits for the heartbeat goroutine to end.
func (c *TaskConsumer) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, msg jetstream.Msg) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(c.cfg.AckWait / 3)
		defer tick.Stop()
		last := time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case now := <-tick.C:
				if now.Sub(last) >= c.cfg.AckWait {
					cancel(pipeline.ErrClaimLost)
					return
				}
				if err := msg.InProgress(); err != nil {
					c.log.Warn("heartbeat failed", "err", err)
					continue
				}
				c.stats.Heartbeats.Add(1)
				last = now
			}
		}
	}()
	return func() { close(done); wg.Wait() }
}
