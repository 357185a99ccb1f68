package tracing

import (
	"context"
	"fmt"
	"log/slog"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

// instrumentation names the tracer that makes Drover's spans.
const instrumentation = "github.com/droverhq/drover"

// Span names.
const (
	SpanTask       = "drover.task"
	SpanRolePrefix = "drover.role "
)

// settings are what FromEnv resolved.
type settings struct {
	endpoint string
	useJSON  bool
	service  string // OTEL_SERVICE_NAME; "" when unset
	opts     Options
	// exporter replaces the OTLP exporter (tests).
	exporter sdktrace.SpanExporter
}

// otlpTracer exports spans through a batching SDK tracer provider.
type otlpTracer struct {
	provider  *sdktrace.TracerProvider
	tracer    trace.Tracer
	roleNames map[subjects.Role]string
}

// newOTLP builds the exporter, the resource and the provider. The
// provider's batcher runs one goroutine until Shutdown.
func newOTLP(ctx context.Context, s settings) (*otlpTracer, error) {
	log := s.opts.Log
	if log == nil {
		log = slog.Default()
	}
	exp := s.exporter
	if exp == nil {
		// The endpoint's credentials (userinfo, ?token=) never reach an
		// error or the log.
		secrets := redact.New(redact.URLSecrets(s.endpoint)...)
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpointURL(s.endpoint)}
		if s.useJSON {
			opts = append(opts, otlptracehttp.WithEncoding(otlptracehttp.EncodingJSON))
		}
		var err error
		if exp, err = otlptracehttp.New(ctx, opts...); err != nil {
			return nil, fmt.Errorf("tracing: OTLP exporter for %s: %w", redact.URL(s.endpoint), secrets.Error(err))
		}
		// Export errors would go to the standard logger; send them to
		// the worker's log instead (the handler is process-wide).
		otel.SetErrorHandler(otel.ErrorHandlerFunc(func(err error) {
			log.Warn("tracing: export failed", "endpoint", redact.URL(s.endpoint), "err", secrets.Error(err))
		}))
	}
	attrs := []attribute.KeyValue{attribute.String("service.name", DefaultServiceName)}
	if s.opts.Version != "" {
		attrs = append(attrs, attribute.String("service.version", s.opts.Version))
	}
	if s.opts.WorkerID != "" {
		attrs = append(attrs, attribute.String("service.instance.id", s.opts.WorkerID))
	}
	// Later detectors win: OTEL_RESOURCE_ATTRIBUTES over the defaults,
	// OTEL_SERVICE_NAME (as resolved by FromEnv) over both.
	detectors := []resource.Option{resource.WithTelemetrySDK(), resource.WithAttributes(attrs...), resource.WithFromEnv()}
	if s.service != "" {
		detectors = append(detectors, resource.WithAttributes(attribute.String("service.name", s.service)))
	}
	res, err := resource.New(ctx, detectors...)
	if err != nil {
		_ = exp.Shutdown(ctx)
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	tp := sdktrace.NewTracerProvider(sdktrace.WithBatcher(exp), sdktrace.WithResource(res))
	t := &otlpTracer{provider: tp, tracer: tp.Tracer(instrumentation), roleNames: map[subjects.Role]string{}}
	for _, r := range subjects.Roles {
		t.roleNames[r] = SpanRolePrefix + string(r)
	}
	return t, nil
}

// StartTask implements pipeline.Tracer: a consumer span, the child of the
// remote span traceparent names when it is valid.
func (t *otlpTracer) StartTask(ctx context.Context, traceparent string) (context.Context, pipeline.Span) {
	if traceparent != "" {
		ctx = propagation.TraceContext{}.Extract(ctx, propagation.MapCarrier{"traceparent": traceparent})
	}
	ctx, s := t.tracer.Start(ctx, SpanTask, trace.WithSpanKind(trace.SpanKindConsumer))
	return ctx, span{s}
}

// StartRole implements pipeline.Tracer.
func (t *otlpTracer) StartRole(ctx context.Context, role subjects.Role) (context.Context, pipeline.Span) {
	name, ok := t.roleNames[role]
	if !ok {
		name = SpanRolePrefix + string(role)
	}
	ctx, s := t.tracer.Start(ctx, name)
	return ctx, span{s}
}

// Shutdown implements Tracer.
func (t *otlpTracer) Shutdown(ctx context.Context) error {
	if err := t.provider.Shutdown(ctx); err != nil {
		return fmt.Errorf("tracing: shutdown: %w", err)
	}
	return nil
}

// Enabled implements Tracer.
func (t *otlpTracer) Enabled() bool { return true }

// span adapts an OpenTelemetry span to pipeline.Span.
type span struct{ s trace.Span }

func (s span) SetString(k, v string)    { s.s.SetAttributes(attribute.String(k, v)) }
func (s span) SetInt(k string, v int64) { s.s.SetAttributes(attribute.Int64(k, v)) }
func (s span) SetBool(k string, v bool) { s.s.SetAttributes(attribute.Bool(k, v)) }
func (s span) End()                     { s.s.End() }
func (s span) TraceParent() string      { return traceParent(s.s.SpanContext()) }
func (s span) SetError(err error) {
	if err != nil {
		s.s.RecordError(err)
		s.s.SetStatus(codes.Error, err.Error())
	}
}

// traceParent formats sc as a W3C traceparent header (version 00).
func traceParent(sc trace.SpanContext) string {
	if !sc.IsValid() {
		return ""
	}
	return fmt.Sprintf("00-%s-%s-%s", sc.TraceID(), sc.SpanID(), sc.TraceFlags())
}
