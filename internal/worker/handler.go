package worker

import (
	"context"
	"sync"
	"time"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/pipeline"
)

// handler adapts the pipeline to consumers.Handler: the consumers package
// is public and knows nothing of the pipeline's types. The pipeline's
// delivery limit is the consumer's actual max deliver (less one), carried
// by each delivery; a pipeline is built per limit met, which happens only
// when the consumer's settings change.
type handler struct {
	build func(maxDeliver int) *pipeline.Pipeline

	mu    sync.Mutex
	byMax map[int]*pipeline.Pipeline
	store *storeWatch // told of each outcome, when set
}

var (
	_ consumers.Handler  = (*handler)(nil)
	_ consumers.Poisoner = (*handler)(nil)
)

func newHandler(build func(maxDeliver int) *pipeline.Pipeline) *handler {
	return &handler{build: build, byMax: map[int]*pipeline.Pipeline{}}
}

// pipeline returns the pipeline for a delivery limit.
func (h *handler) pipeline(maxDeliver int) *pipeline.Pipeline {
	h.mu.Lock()
	defer h.mu.Unlock()
	p, ok := h.byMax[maxDeliver]
	if !ok {
		if len(h.byMax) >= 8 { // settings churn: keep the map bounded
			clear(h.byMax)
		}
		p = h.build(maxDeliver)
		h.byMax[maxDeliver] = p
	}
	return p
}

// Handle runs the delivery through the pipeline. A lost claim's cause
// matches the pipeline's ErrClaimLost as well as the consumer's: the
// consumer is given it (consumers.Config.ClaimLost).
func (h *handler) Handle(ctx context.Context, d consumers.Delivery) consumers.Outcome {
	out := h.pipeline(d.MaxDeliver).Handle(ctx, deliveryOf(d))
	if h.store != nil {
		h.store.observe(out, time.Now())
	}
	return outcomeOf(out)
}

// Poison fails a task whose handling panicked through its deliveries.
func (h *handler) Poison(ctx context.Context, d consumers.Delivery, cause error) consumers.Outcome {
	return outcomeOf(h.pipeline(d.MaxDeliver).Poison(ctx, deliveryOf(d), cause.Error()))
}

func deliveryOf(d consumers.Delivery) pipeline.Delivery {
	return pipeline.Delivery{
		Queue:        d.Queue,
		Body:         d.Body,
		Header:       d.Header,
		StreamSeq:    d.StreamSeq,
		NumDelivered: d.NumDelivered,
		Timestamp:    d.Timestamp,
		Stale:        d.Stale,
	}
}

func outcomeOf(out pipeline.Outcome) consumers.Outcome {
	a := consumers.Nak
	switch out.Action {
	case pipeline.Ack:
		a = consumers.Ack
	case pipeline.Term:
		a = consumers.Term
	case pipeline.Nak:
		a = consumers.Nak
	case pipeline.Abandon:
		a = consumers.Abandon
	}
	return consumers.Outcome{Action: a, Delay: out.Delay, Terminal: out.Terminal, Reason: out.Reason, Err: out.Err, RetryInPlace: out.RetryInPlace}
}
