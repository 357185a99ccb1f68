package worker

import (
	"context"
	"sync"
	"time"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/pipeline"
)

// handler is the consumers.Handler of a worker: the pipeline for the
// delivery limit each message carries (the consumer's actual max deliver,
// less one). A pipeline is built per limit met, which happens only when the
// consumer's settings change.
type handler struct {
	build func(maxDeliver int) *pipeline.Pipeline

	mu    sync.Mutex
	byMax map[int]*pipeline.Pipeline
	store *storeWatch // told of each outcome, when set
}

var (
	_ consumers.Handler  = (*handler)(nil)
	_ consumers.Poisoner = (*handler)(nil)
	_ consumers.Poisoner = (*pipeline.Pipeline)(nil)
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

// Handle runs the message through the pipeline.
func (h *handler) Handle(ctx context.Context, m consumers.Msg) consumers.Outcome {
	out := h.pipeline(m.MaxDeliver).Handle(ctx, m)
	if h.store != nil {
		h.store.observe(out, time.Now())
	}
	return out
}

// Poison fails a task whose handling panicked through its deliveries.
func (h *handler) Poison(ctx context.Context, m consumers.Msg, cause error) consumers.Outcome {
	return h.pipeline(m.MaxDeliver).Poison(ctx, m, cause)
}
