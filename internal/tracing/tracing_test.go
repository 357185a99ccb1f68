package tracing

import (
	"context"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.uber.org/goleak"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/subjects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

const parent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"

func env(vars map[string]string) func(string) string {
	return func(k string) string { return vars[k] }
}

// TestTracingNopAllocatesNothing: with no endpoint the worker gets the no-op
// tracer, and a task span with three role spans costs no allocation. Not
// parallel: AllocsPerRun counts the whole process's allocations.
func TestTracingNopAllocatesNothing(t *testing.T) {
	tr, err := FromEnv(context.Background(), Options{Getenv: env(nil)})
	require.NoError(t, err)
	require.False(t, tr.Enabled())
	ctx := context.Background()
	allocs := testing.AllocsPerRun(1000, func() {
		tctx, task := tr.StartTask(ctx, parent)
		task.SetString(pipeline.AttrWorkflow, "wf")
		task.SetInt(pipeline.AttrStreamSeq, 42)
		for _, r := range subjects.Roles {
			_, role := tr.StartRole(tctx, r)
			role.SetBool(pipeline.AttrCached, true)
			role.SetError(nil)
			if role.TraceParent() != "" {
				t.Fatal("a no-op span has a traceparent")
			}
			role.End()
		}
		task.End()
	})
	require.Zero(t, allocs)
	require.NoError(t, tr.Shutdown(ctx))
}

func TestTracingFromEnvOff(t *testing.T) {
	t.Parallel()
	for name, vars := range map[string]map[string]string{
		"nothing set":     nil,
		"sdk disabled":    {"OTEL_SDK_DISABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
		"exporter none":   {"OTEL_TRACES_EXPORTER": "none", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"},
		"blank endpoints": {"OTEL_EXPORTER_OTLP_ENDPOINT": " ", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": ""},
	} {
		tr, err := FromEnv(context.Background(), Options{Getenv: env(vars)})
		require.NoError(t, err, name)
		require.Equal(t, Nop{}, tr, name)
	}
}

func TestTracingFromEnvErrorsNameTheVariable(t *testing.T) {
	t.Parallel()
	for want, vars := range map[string]map[string]string{
		"OTEL_EXPORTER_OTLP_PROTOCOL":        {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc"},
		"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4317", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "grpc"},
		"OTEL_EXPORTER_OTLP_ENDPOINT":        {"OTEL_EXPORTER_OTLP_ENDPOINT": "collector:4318"},
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "ftp://collector/v1/traces"},
	} {
		tr, err := FromEnv(context.Background(), Options{Getenv: env(vars)})
		require.ErrorContains(t, err, want)
		require.Equal(t, Nop{}, tr)
	}
}

func TestTracingEndpointResolution(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		explicit string
		vars     map[string]string
		want     string
	}{
		{vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, want: "http://c:4318/v1/traces"},
		{vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "https://c/otlp/"}, want: "https://c/otlp/v1/traces"},
		{vars: map[string]string{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/custom", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://d"}, want: "http://c:4318/custom"},
		{explicit: "http://e/x", vars: map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": "http://d"}, want: "http://e/x"},
	} {
		got, err := endpointOf(c.explicit, env(c.vars))
		require.NoError(t, err)
		require.Equal(t, c.want, got)
	}
}

// TestTracingFromEnvOn builds the real OTLP/HTTP exporter and shuts it down
// without exporting anything.
func TestTracingFromEnvOn(t *testing.T) {
	t.Parallel()
	tr, err := FromEnv(context.Background(), Options{Getenv: env(map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:1", "OTEL_EXPORTER_OTLP_PROTOCOL": "http/json",
	})})
	require.NoError(t, err)
	require.True(t, tr.Enabled())
	require.NoError(t, tr.Shutdown(context.Background()))
}

// TestTracingSpans checks the spans' tree, names, attributes and traceparents
// against an in-memory exporter.
func TestTracingSpans(t *testing.T) {
	t.Parallel()
	exp := tracetest.NewInMemoryExporter()
	tr, err := newOTLP(context.Background(), settings{service: "svc", exporter: exp, opts: Options{WorkerID: "w1", Version: "v9"}})
	require.NoError(t, err)
	t.Cleanup(func() { require.NoError(t, tr.Shutdown(context.Background())) })

	ctx, task := tr.StartTask(context.Background(), parent)
	task.SetString(pipeline.AttrWorkflow, "wf")
	_, role := tr.StartRole(ctx, subjects.RoleJudge)
	role.SetInt(pipeline.AttrAttempt, 2)
	role.SetError(errors.New("boom"))
	tp := role.TraceParent()
	role.End()
	task.End()
	_, root := tr.StartTask(context.Background(), "not a traceparent")
	root.End()
	require.NoError(t, tr.provider.ForceFlush(context.Background()))

	spans := exp.GetSpans().Snapshots()
	require.Len(t, spans, 3)
	judge, tsk, other := spans[0], spans[1], spans[2]
	require.Equal(t, "drover.role judge", judge.Name())
	require.Equal(t, SpanTask, tsk.Name())
	require.Equal(t, trace.SpanKindConsumer, tsk.SpanKind())
	require.Equal(t, "4bf92f3577b34da6a3ce929d0e0e4736", tsk.SpanContext().TraceID().String())
	require.Equal(t, "00f067aa0ba902b7", tsk.Parent().SpanID().String())
	require.True(t, tsk.Parent().IsRemote())
	require.Equal(t, tsk.SpanContext().SpanID(), judge.Parent().SpanID())
	require.Equal(t, tsk.SpanContext().TraceID(), judge.SpanContext().TraceID())
	require.Equal(t, "00-4bf92f3577b34da6a3ce929d0e0e4736-"+judge.SpanContext().SpanID().String()+"-01", tp)
	require.Contains(t, tsk.Attributes(), attribute.String(pipeline.AttrWorkflow, "wf"))
	require.Contains(t, judge.Attributes(), attribute.Int64(pipeline.AttrAttempt, 2))
	require.Equal(t, codes.Error, judge.Status().Code)
	require.Equal(t, "boom", judge.Status().Description)
	require.False(t, other.Parent().IsValid(), "an unreadable traceparent starts a new trace")

	res := map[attribute.Key]string{}
	for _, kv := range tsk.Resource().Attributes() {
		res[kv.Key] = kv.Value.String()
	}
	require.Equal(t, "svc", res["service.name"])
	require.Equal(t, "w1", res["service.instance.id"])
	require.Equal(t, "v9", res["service.version"])
}

// The service name: OTEL_SERVICE_NAME, else a service.name in
// OTEL_RESOURCE_ATTRIBUTES, else "drover".
func TestTracingServiceName(t *testing.T) {
	serviceOf := func(service string) string {
		exp := tracetest.NewInMemoryExporter()
		tr, err := newOTLP(context.Background(), settings{service: service, exporter: exp})
		require.NoError(t, err)
		defer func() { require.NoError(t, tr.Shutdown(context.Background())) }()
		_, span := tr.StartTask(context.Background(), "")
		span.End()
		require.NoError(t, tr.provider.ForceFlush(context.Background()))
		for _, kv := range exp.GetSpans().Snapshots()[0].Resource().Attributes() {
			if kv.Key == "service.name" {
				return kv.Value.String()
			}
		}
		return ""
	}
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "")
	require.Equal(t, DefaultServiceName, serviceOf(""))
	t.Setenv("OTEL_RESOURCE_ATTRIBUTES", "service.name=from-attributes")
	require.Equal(t, "from-attributes", serviceOf(""))
	require.Equal(t, "from-service-name", serviceOf("from-service-name"))
}
