package consumers

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/pipeline"
)

// Stats counts what the consumer's watchdog needs and reports; what is
// done with each message goes to Metrics.
type Stats struct {
	// Fetched counts messages started; the watchdog watches it move.
	Fetched atomic.Int64
	// WatchdogStalls counts stalls the watchdog repaired.
	WatchdogStalls atomic.Int64
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
		c.cfg.Metrics.Redelivered()
	}
	c.cfg.Metrics.InFlight(1)
	defer c.cfg.Metrics.InFlight(-1)
	ctx, cancel := context.WithCancelCause(workCtx)
	defer cancel(nil)
	hb := c.heartbeat(ctx, cancel, msg)
	out := c.h.Handle(ctx, pipeline.Delivery{
		Queue:        c.cfg.Queue,
		Body:         msg.Data(),
		Header:       msg.Headers(),
		StreamSeq:    md.Sequence.Stream,
		NumDelivered: md.NumDelivered,
		Timestamp:    md.Timestamp,
		Stale:        hb.stale,
	})
	if stale := hb.stop(); stale && out.Action == pipeline.Nak {
		// Not heard from for a whole ack wait: the message may be another
		// delivery's now, and a nak would hand it back under its new owner.
		out = pipeline.Outcome{Action: pipeline.Abandon, Err: pipeline.ErrClaimLost}
	}
	c.cfg.Metrics.Settled(out.Action.String())
	switch out.Action {
	case pipeline.Ack:
		err = msg.Ack()
	case pipeline.Term:
		err = msg.TermWithReason(string(out.Reason))
	case pipeline.Nak:
		if workCtx.Err() != nil || out.Delay <= 0 {
			err = msg.Nak() // stopping: hand it back at once
		} else {
			err = msg.NakWithDelay(out.Delay)
		}
	case pipeline.Abandon:
		c.log.Info("claim lost; leaving the message to its new owner", "stream_seq", md.Sequence.Stream, "delivery", md.NumDelivered, "reason", out.Err)
	}
	if err != nil {
		c.log.Warn("could not settle the message", "action", out.Action.String(), "stream_seq", md.Sequence.Stream, "err", err)
	}
}

// beat is a running heartbeat.
type beat struct {
	done chan struct{}
	wg   sync.WaitGroup
	last atomic.Int64 // unix nanos of the last beat (or the start)
	wait time.Duration
}

// stale reports whether the claim went a whole ack wait without a beat.
func (b *beat) stale() bool { return time.Since(time.Unix(0, b.last.Load())) >= b.wait }

// stop ends the heartbeat and reports whether the claim is stale.
func (b *beat) stop() bool {
	close(b.done)
	b.wg.Wait()
	return b.stale()
}

// heartbeat keeps the claim with in-progress acks at a third of the ack
// wait. If the worker could not beat for a whole ack wait (it was stopped or
// starved), the server has handed the message on: the task's context is
// cancelled with pipeline.ErrClaimLost and no further beat is sent. Time is
// read when a tick is handled, never from the tick, which may have waited
// in its channel through a stop.
func (c *TaskConsumer) heartbeat(ctx context.Context, cancel context.CancelCauseFunc, msg jetstream.Msg) *beat {
	b := &beat{done: make(chan struct{}), wait: c.cfg.AckWait}
	b.last.Store(time.Now().UnixNano())
	b.wg.Add(1)
	go func() {
		defer b.wg.Done()
		tick := time.NewTicker(b.wait / 3)
		defer tick.Stop()
		for {
			select {
			case <-b.done:
				return
			case <-ctx.Done():
				return
			case <-tick.C:
				if b.stale() {
					cancel(pipeline.ErrClaimLost)
					return
				}
				if err := msg.InProgress(); err != nil {
					c.log.Warn("heartbeat failed", "err", err)
					continue
				}
				c.cfg.Metrics.Heartbeat()
				b.last.Store(time.Now().UnixNano())
			}
		}
	}()
	return b
}
