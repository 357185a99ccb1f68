package tracing

import (
	"testing"

	"github.com/stretchr/testify/require"
)

func TestEndpointErrorHidesCredentials(t *testing.T) {
	t.Parallel()
	for _, v := range []string{"ftp://u:pw-otel-1@collector:4318", "u:pw-otel-1@collector:4318", "grpc://collector:4317/?token=pw-otel-1"} {
		_, err := endpointOf("", env(map[string]string{"OTEL_EXPORTER_OTLP_ENDPOINT": v}))
		require.Error(t, err, v)
		require.NotContains(t, err.Error(), "pw-otel-1", v)
		require.Contains(t, err.Error(), "collector", v)
	}
}
