package pipeline

import (
	"context"
	"strings"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/subjects"
)

// Tracer starts the spans of task deliveries and roles. The tracing package
// implements it with OpenTelemetry, so the pipeline does not depend on it;
// NopTracer, the default, records nothing and allocates nothing.
type Tracer interface {
	// StartTask starts the span of one task delivery: a child of
	// traceparent (a W3C trace context header) when it is valid, so a
	// producer's trace continues, else a new root.
	StartTask(ctx context.Context, traceparent string) (context.Context, Span)
	// StartRole starts a role's span as a child of the span in ctx.
	StartRole(ctx context.Context, role subjects.Role) (context.Context, Span)
}

// Span is a span in progress. Its methods must not be called after End.
type Span interface {
	SetString(key, value string)
	SetInt(key string, value int64)
	SetBool(key string, value bool)
	// SetError records err, when not nil, and marks the span failed.
	SetError(err error)
	// TraceParent is the span's context as a W3C traceparent header, for
	// the role's runner; "" when nothing is traced.
	TraceParent() string
	End()
}

// The span attributes the pipeline sets.
const (
	AttrWorkflow  = "drover.workflow_id"
	AttrTask      = "drover.task_id"
	AttrQueue     = "drover.queue"
	AttrStreamSeq = "drover.stream_seq"
	AttrDelivery  = "drover.delivery"
	// AttrOutcome is what was done with the message: ack, term, nak or
	// abandon; AttrTerminal and AttrReason add the terminal event and the
	// DLQ reason when there are any.
	AttrOutcome  = "drover.outcome"
	AttrTerminal = "drover.terminal"
	AttrReason   = "drover.reason"
	AttrRole     = "drover.role"
	AttrAttempt  = "drover.attempt"
	AttrTry      = "drover.try"
	// AttrRunner is the runner identity's prefix ("sim/v1", "exec/v1",
	// "openai/v1"): the kind of runner without its fingerprint.
	AttrRunner = "drover.runner"
	AttrCached = "drover.cached"
)

// NopTracer traces nothing.
type NopTracer struct{}

// StartTask implements Tracer.
func (NopTracer) StartTask(ctx context.Context, _ string) (context.Context, Span) {
	return ctx, nopSpan{}
}

// StartRole implements Tracer.
func (NopTracer) StartRole(ctx context.Context, _ subjects.Role) (context.Context, Span) {
	return ctx, nopSpan{}
}

type nopSpan struct{}

func (nopSpan) SetString(string, string) {}
func (nopSpan) SetInt(string, int64)     {}
func (nopSpan) SetBool(string, bool)     {}
func (nopSpan) SetError(error)           {}
func (nopSpan) TraceParent() string      { return "" }
func (nopSpan) End()                     {}

// runnerKind is a runner identity without its fingerprint: the part
// before the first colon.
func runnerKind(identity string) string {
	if i := strings.IndexByte(identity, ':'); i >= 0 {
		return identity[:i]
	}
	return identity
}

// endTask records the delivery's outcome on its span and ends it.
func endTask(span Span, out consumers.Outcome) {
	span.SetString(AttrOutcome, out.Action.String())
	if out.Terminal != "" {
		span.SetString(AttrTerminal, string(out.Terminal))
	}
	if out.Reason != "" {
		span.SetString(AttrReason, string(out.Reason))
	}
	span.SetError(out.Err)
	span.End()
}
