package ops

import (
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"
)

// Every limit of the ops server is set: none is left at net/http's zero,
// which means no limit.
func TestServerLimits(t *testing.T) {
	t.Parallel()
	s, err := Listen("127.0.0.1:0", nil, nil, prometheus.NewRegistry())
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.ln.Close() })
	for _, c := range []struct {
		name      string
		got, want time.Duration
	}{
		{"ReadHeaderTimeout", s.srv.ReadHeaderTimeout, ReadHeaderTimeout},
		{"ReadTimeout", s.srv.ReadTimeout, ReadTimeout},
		{"WriteTimeout", s.srv.WriteTimeout, WriteTimeout},
		{"IdleTimeout", s.srv.IdleTimeout, IdleTimeout},
	} {
		require.Positive(t, c.want, c.name)
		require.Equal(t, c.want, c.got, c.name)
	}
	require.GreaterOrEqual(t, WriteTimeout, 10*time.Second, "a /metrics scrape may take a while")
	require.Equal(t, MaxHeaderBytes, s.srv.MaxHeaderBytes)
	require.Positive(t, s.srv.MaxHeaderBytes)
	require.NotNil(t, s.srv.ErrorLog, "net/http's own errors go to the worker's log")
}
