// Package tracing exports the pipeline's spans over OTLP/HTTP with
// OpenTelemetry. It is the only package that imports OpenTelemetry: the
// pipeline starts its spans through pipeline.Tracer, and without an OTLP
// endpoint in the environment it gets pipeline.NopTracer, which costs
// nothing.
//
// The environment is OpenTelemetry's own:
//
//   - OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (a URL used as it is) or
//     OTEL_EXPORTER_OTLP_ENDPOINT (a base URL; /v1/traces is appended)
//     turns tracing on. Neither set: tracing is off.
//   - OTEL_EXPORTER_OTLP_PROTOCOL (or ..._TRACES_PROTOCOL): http/protobuf
//     (the default) or http/json; grpc is refused with an error.
//   - OTEL_SERVICE_NAME overrides the service name "drover";
//     OTEL_RESOURCE_ATTRIBUTES adds resource attributes.
//   - OTEL_SDK_DISABLED=true or OTEL_TRACES_EXPORTER=none turn it off.
//   - The exporter reads OTEL_EXPORTER_OTLP_HEADERS, _TIMEOUT,
//     _COMPRESSION and _CERTIFICATE, and the SDK OTEL_TRACES_SAMPLER and
//     OTEL_BSP_*, as OpenTelemetry documents them.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path"
	"strings"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/redact"
)

// DefaultServiceName is the service.name of Drover's spans unless
// OTEL_SERVICE_NAME says otherwise.
const DefaultServiceName = "drover"

// Tracer is a pipeline.Tracer with a lifetime: Shutdown ends it, exporting
// the spans it still buffers. Call it once, after the worker drained.
type Tracer interface {
	pipeline.Tracer
	// Shutdown flushes the buffered spans and stops the exporter, within
	// ctx's deadline.
	Shutdown(ctx context.Context) error
	// Enabled reports whether spans are exported.
	Enabled() bool
}

// Options configure a tracer. Zero fields take the defaults noted.
type Options struct {
	// Endpoint is the OTLP/HTTP traces URL, such as
	// http://127.0.0.1:4318/v1/traces, used as it is (default: from the
	// environment; none there means tracing is off).
	Endpoint string
	// WorkerID is the service.instance.id resource attribute (default: none).
	WorkerID string
	// Version is the service.version resource attribute (default: none).
	Version string
	// Log receives export errors (default slog.Default()).
	Log *slog.Logger
	// Getenv reads the environment (default os.Getenv).
	Getenv func(string) string
}

// Nop is the tracer of a worker that traces nothing: pipeline.NopTracer
// with a Shutdown that has nothing to do.
type Nop struct{ pipeline.NopTracer }

// Shutdown implements Tracer.
func (Nop) Shutdown(context.Context) error { return nil }

// Enabled implements Tracer.
func (Nop) Enabled() bool { return false }

// FromEnv returns the tracer the environment asks for: an OTLP/HTTP
// exporter when an endpoint is set, else Nop. A malformed endpoint or an
// unsupported protocol is an error that names the variable.
func FromEnv(ctx context.Context, opts Options) (Tracer, error) {
	getenv := opts.Getenv
	if getenv == nil {
		getenv = os.Getenv
	}
	if strings.EqualFold(strings.TrimSpace(getenv("OTEL_SDK_DISABLED")), "true") ||
		strings.EqualFold(strings.TrimSpace(getenv("OTEL_TRACES_EXPORTER")), "none") {
		return Nop{}, nil
	}
	endpoint, err := endpointOf(opts.Endpoint, getenv)
	if err != nil || endpoint == "" {
		return Nop{}, err
	}
	useJSON, err := jsonEncoding(getenv)
	if err != nil {
		return Nop{}, err
	}
	service := strings.TrimSpace(getenv("OTEL_SERVICE_NAME"))
	t, err := newOTLP(ctx, settings{endpoint: endpoint, useJSON: useJSON, service: service, opts: opts})
	if err != nil {
		return Nop{}, err
	}
	return t, nil
}

// endpointOf resolves the traces URL: the explicit one, else the
// per-signal variable as it is, else the base variable with /v1/traces.
// "" means tracing is off.
func endpointOf(explicit string, getenv func(string) string) (string, error) {
	name, v := "Options.Endpoint", explicit
	base := false
	if v == "" {
		name, v = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
	}
	if v == "" {
		name, v, base = "OTEL_EXPORTER_OTLP_ENDPOINT", strings.TrimSpace(getenv("OTEL_EXPORTER_OTLP_ENDPOINT")), true
	}
	if v == "" {
		return "", nil
	}
	u, err := url.Parse(v)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return "", fmt.Errorf("%s %q: want an http:// or https:// URL such as http://127.0.0.1:4318", name, redact.URL(v))
	}
	if base {
		u.Path = path.Join("/", u.Path, "v1/traces")
	}
	return u.String(), nil
}

// jsonEncoding reads the OTLP protocol: false for http/protobuf (the
// default), true for http/json. Drover does not link a gRPC exporter.
func jsonEncoding(getenv func(string) string) (bool, error) {
	name := "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
	v := strings.TrimSpace(getenv(name))
	if v == "" {
		name = "OTEL_EXPORTER_OTLP_PROTOCOL"
		v = strings.TrimSpace(getenv(name))
	}
	switch v {
	case "", "http/protobuf":
		return false, nil
	case "http/json":
		return true, nil
	}
	return false, fmt.Errorf("%s %q: drover exports OTLP over HTTP only (http/protobuf or http/json); point the endpoint at the collector's HTTP port (4318)", name, v)
}
