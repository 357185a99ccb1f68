package tests

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/hex"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/tracing"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// otlpReceiver is an in-process OTLP/HTTP traces endpoint: it decodes each
// protobuf ExportTraceServiceRequest on /v1/traces and keeps its spans.
type otlpReceiver struct {
	srv      *httptest.Server
	mu       sync.Mutex
	spans    []*tracepb.Span
	resource map[string]string
}

func newOTLPReceiver(t *testing.T) *otlpReceiver {
	t.Helper()
	r := &otlpReceiver{resource: map[string]string{}}
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		var body io.Reader = req.Body
		if req.Header.Get("Content-Encoding") == "gzip" {
			zr, err := gzip.NewReader(req.Body)
			if err != nil {
				http.Error(w, err.Error(), http.StatusBadRequest)
				return
			}
			body = zr
		}
		raw, err := io.ReadAll(body)
		var msg coltracepb.ExportTraceServiceRequest
		if err == nil {
			err = proto.Unmarshal(raw, &msg)
		}
		if err != nil || req.Header.Get("Content-Type") != "application/x-protobuf" {
			http.Error(w, "want a protobuf ExportTraceServiceRequest", http.StatusBadRequest)
			return
		}
		r.mu.Lock()
		for _, rs := range msg.GetResourceSpans() {
			for _, kv := range rs.GetResource().GetAttributes() {
				r.resource[kv.GetKey()] = kv.GetValue().GetStringValue()
			}
			for _, ss := range rs.GetScopeSpans() {
				r.spans = append(r.spans, ss.GetSpans()...)
			}
		}
		r.mu.Unlock()
		out, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(out)
	})
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	return r
}

// byName returns the received spans by name.
func (r *otlpReceiver) byName() map[string]*tracepb.Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]*tracepb.Span, len(r.spans))
	for _, s := range r.spans {
		out[s.GetName()] = s
	}
	return out
}

// traceScript is an exec agent that records $TRACEPARENT in $OUT/<role>
// and answers as its role.
const traceScript = `#!/bin/sh
cat >/dev/null
printf '%s' "${TRACEPARENT-unset}" > "$OUT/$DROVER_ROLE"
case $DROVER_ROLE in
planner) echo '{"plan": "p", "steps": ["s"]}' ;;
implementer) echo '{"change": "c", "files": ["a.go"], "notes": "n"}' ;;
judge) echo '{"verdict": "approve", "feedback": "ok"}' ;;
esac
`

func traceExecSet(t *testing.T, out string) runner.Set {
	t.Helper()
	sh := filepath.Join(t.TempDir(), "agent.sh")
	require.NoError(t, os.WriteFile(sh, []byte(traceScript), 0o755))
	var rs [3]runner.Runner
	for i, role := range subjects.Roles {
		e, err := runner.NewExec(role, runner.ExecConfig{Argv: []string{sh}, Env: map[string]string{"OUT": out}}, nil)
		require.NoError(t, err)
		rs[i] = e
	}
	return runner.Set{Planner: rs[0], Implementer: rs[1], Judge: rs[2]}
}

// TestTracingEndToEnd submits a task whose traceparent header is written
// in a case Drover does not write, runs it through exec runners with
// spans exported over OTLP/HTTP, and checks that the producer's trace
// continues through the task and its roles, down to each agent's
// environment, while the audit events keep the original header.
func TestTracingEndToEnd(t *testing.T) {
	t.Parallel()
	b := setup(t)
	rec := newOTLPReceiver(t)
	const (
		traceID  = "4bf92f3577b34da6a3ce929d0e0e4736"
		parentID = "00f067aa0ba902b7"
		tp       = "00-" + traceID + "-" + parentID + "-01"
		workerID = "trace-worker"
	)
	ctx := context.Background()
	tracer, err := tracing.FromEnv(ctx, tracing.Options{WorkerID: workerID, Version: "test", Log: natstest.Quiet(),
		Getenv: func(k string) string {
			return map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": rec.srv.URL}[k]
		}})
	require.NoError(t, err)
	require.True(t, tracer.Enabled())
	out := t.TempDir()

	nc, err := nats.Connect(b.url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	w, err := worker.New(nc, worker.Config{Runners: traceExecSet(t, out), Tracer: tracer, Log: natstest.Quiet(),
		FetchWait: time.Second, Pipeline: pipeline.Config{Worker: workerID}})
	require.NoError(t, err)
	stopW, _ := runOwned(t, w)
	var stopOnce sync.Once
	stop := func() {
		stopOnce.Do(func() {
			require.NoError(t, stopW())
			sctx, cancel := context.WithTimeout(ctx, 20*time.Second)
			defer cancel()
			require.NoError(t, tracer.Shutdown(sctx), "flushing the spans")
		})
	}
	t.Cleanup(stop)

	after, err := producer.AuditLastSeq(ctx, b.js, b.names)
	require.NoError(t, err)
	req := task("wf-trace", "T1")
	body, err := json.Marshal(req)
	require.NoError(t, err)
	msg := nats.NewMsg(b.names.TaskSubject(subjects.DefaultQueue))
	msg.Data = body
	msg.Header["Nats-Msg-Id"] = []string{subjects.TaskMsgID(req.Workflow, req.ID)}
	msg.Header["Traceparent"] = []string{tp} // read in any case
	_, err = b.js.PublishMsg(ctx, msg)
	require.NoError(t, err)
	term := b.waitTerminal(req.Workflow, after, 1)
	require.Equal(t, subjects.EventTaskCompleted, term[req.ID].EventType)
	stop() // drain, then shut the tracer down: every span is exported

	spans := rec.byName()
	require.Len(t, spans, 4, "one task span and three role spans")
	rec.mu.Lock()
	require.Len(t, rec.spans, 4, "no other spans")
	rec.mu.Unlock()
	taskSpan := spans[tracing.SpanTask]
	require.NotNil(t, taskSpan)
	require.Equal(t, traceID, hex.EncodeToString(taskSpan.GetTraceId()))
	require.Equal(t, parentID, hex.EncodeToString(taskSpan.GetParentSpanId()), "the producer's span is the task span's parent")
	require.Equal(t, tracepb.Span_SPAN_KIND_CONSUMER, taskSpan.GetKind())
	attrs := spanAttrs(taskSpan)
	require.Equal(t, map[string]any{
		pipeline.AttrWorkflow: req.Workflow, pipeline.AttrTask: req.ID, pipeline.AttrQueue: subjects.DefaultQueue,
		pipeline.AttrStreamSeq: int64(1), pipeline.AttrDelivery: int64(1),
		pipeline.AttrOutcome: "ack", pipeline.AttrTerminal: string(subjects.EventTaskCompleted),
	}, attrs)
	for _, role := range subjects.Roles {
		s := spans[tracing.SpanRolePrefix+string(role)]
		require.NotNil(t, s, role)
		require.Equal(t, traceID, hex.EncodeToString(s.GetTraceId()), role)
		require.Equal(t, taskSpan.GetSpanId(), s.GetParentSpanId(), "%s span's parent is the task span", role)
		attrs := spanAttrs(s)
		require.Equal(t, string(role), attrs[pipeline.AttrRole])
		require.Equal(t, int64(1), attrs[pipeline.AttrAttempt])
		require.Equal(t, "exec/v1", attrs[pipeline.AttrRunner])
		require.Equal(t, false, attrs[pipeline.AttrCached])
		require.Equal(t, tracepb.Status_STATUS_CODE_UNSET, s.GetStatus().GetCode())
		got, err := os.ReadFile(filepath.Join(out, string(role)))
		require.NoError(t, err)
		require.Equal(t, "00-"+traceID+"-"+hex.EncodeToString(s.GetSpanId())+"-01", string(got),
			"the %s agent gets its role span as TRACEPARENT", role)
	}
	rec.mu.Lock()
	require.Equal(t, "drover", rec.resource["service.name"])
	require.Equal(t, workerID, rec.resource["service.instance.id"])
	require.Equal(t, "test", rec.resource["service.version"])
	rec.mu.Unlock()

	// The audit events carry the request's own traceparent, in lower case.
	cons, err := b.js.OrderedConsumer(ctx, b.names.AuditStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{b.names.AuditFilter(req.Workflow, "", "", "")}})
	require.NoError(t, err)
	batch, err := cons.FetchNoWait(100)
	require.NoError(t, err)
	n := 0
	for m := range batch.Messages() {
		n++
		require.Equal(t, []string{tp}, m.Headers()[subjects.HeaderTraceparent], m.Subject())
	}
	require.NoError(t, batch.Error())
	require.Equal(t, 5, n, "accepted, three roles, completed")
}

// spanAttrs returns a span's string, int and bool attributes.
func spanAttrs(s *tracepb.Span) map[string]any {
	out := map[string]any{}
	for _, kv := range s.GetAttributes() {
		switch v := kv.GetValue().GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			out[kv.GetKey()] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			out[kv.GetKey()] = v.IntValue
		case *commonpb.AnyValue_BoolValue:
			out[kv.GetKey()] = v.BoolValue
		}
	}
	return out
}

// TestTraceParentIsNotInTheCacheKey: the same role request traced
// differently is served from the same cache entry.
func TestTraceParentIsNotInTheCacheKey(t *testing.T) {
	t.Parallel()
	req := runner.Request{Role: subjects.RolePlanner, Task: task("wf", "T1"), Attempt: 1}
	traced := req
	traced.TraceParent = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	require.Equal(t, cache.Key(runner.SimIdentity, req), cache.Key(runner.SimIdentity, traced))
	raw, err := json.Marshal(traced)
	require.NoError(t, err)
	require.False(t, bytes.Contains(raw, []byte("4bf92f35")), "not encoded either")
}
