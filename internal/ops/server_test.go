package ops_test

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/ops"
)

// A connection's error, as a probe may wrap it: an address and a path
// that must not reach a client.
var errConn = errors.New("read tcp 10.1.2.3:51234->10.1.2.4:4222: connection reset by peer (/var/lib/nats/jetstream)")

func TestReason(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 150) // 300 bytes, cut inside a rune
	cases := []struct {
		name string
		err  error
		want string
	}{
		{"own words", errors.New("starting: provisioning streams and consumers"), "starting: provisioning streams and consumers"},
		{"wrapped error left out", fmt.Errorf("JetStream: stream DROVER_AUDIT: %w", errConn), "JetStream: stream DROVER_AUDIT"},
		{"only the outer layer", fmt.Errorf("queue q: %w", fmt.Errorf("consumer c: %w", errConn)), "queue q"},
		{"wrapped error with no words of its own", fmt.Errorf("%w", errConn), "unknown"},
		{"first line only", errors.Join(errors.New("draining"), errConn), "draining"},
		{"bounded", errors.New(long), strings.Repeat("é", 100) + "..."},
		{"bounded inside a rune", errors.New("x" + long), "x" + strings.Repeat("é", 99) + "..."},
		{"empty", errors.New(""), "unknown"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, ops.Reason(tc.err))
		})
	}
}

// A failing probe's body carries no wrapped error text (an address, a
// path); the log has all of it.
func TestProbeBodiesHideWrappedErrors(t *testing.T) {
	t.Parallel()
	cases := []struct {
		path string
		err  error
		want string
	}{
		{"/readyz", fmt.Errorf("JetStream: stream DROVER_AUDIT: %w", errConn), "not ready: JetStream: stream DROVER_AUDIT\n"},
		{"/readyz", errors.New("draining: fetching stopped, tasks in flight: 2"), "not ready: draining: fetching stopped, tasks in flight: 2\n"},
		{"/livez", fmt.Errorf("queue default: consume loop exited: %v", errConn), "not live\n"},
	}
	for _, tc := range cases {
		t.Run(tc.path, func(t *testing.T) {
			t.Parallel()
			tb := &testBundle{t: t, logs: &syncBuffer{}, client: &http.Client{}}
			probe := func() error { return tc.err }
			tb.serve(ops.Listen("127.0.0.1:0", probe, probe, prometheus.NewRegistry(), ops.WithLog(tb.log())))
			for range 2 {
				code, body := tb.get(tc.path)
				require.Equal(t, http.StatusServiceUnavailable, code)
				require.Equal(t, tc.want, body)
			}
			logs := tb.logs.String()
			require.Equal(t, 1, strings.Count(logs, "level=WARN"), "logged once: %s", logs)
			require.Contains(t, logs, tc.err.Error(), "the whole error is logged")
		})
	}
}

// A /metrics gathering error answers 500 with a generic body and logs the
// cause.
func TestMetricsErrorIsLoggedNotServed(t *testing.T) {
	t.Parallel()
	tb := &testBundle{t: t, logs: &syncBuffer{}, client: &http.Client{}}
	failing := prometheus.GathererFunc(func() ([]*dto.MetricFamily, error) {
		return nil, fmt.Errorf("collector: open /proc/self/io: %w", errConn)
	})
	tb.serve(ops.Listen("127.0.0.1:0", nil, nil, failing, ops.WithLog(tb.log())))
	code, body := tb.get("/metrics")
	require.Equal(t, http.StatusInternalServerError, code)
	require.Contains(t, body, "see the worker's log")
	require.NotContains(t, body, "/proc")
	require.NotContains(t, body, "10.1.2.3")
	require.Contains(t, tb.logs.String(), "open /proc/self/io")
}

// Headers beyond MaxHeaderBytes (plus net/http's 4 KiB of slack) are
// answered 431, not read into memory.
func TestOversizedHeadersAreRefused(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	req, err := http.NewRequest(http.MethodGet, "http://"+tb.srv.Addr()+"/livez", nil)
	require.NoError(t, err)
	req.Header.Set("X-Big", strings.Repeat("a", 4*ops.MaxHeaderBytes))
	resp, err := tb.client.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
	_, _ = io.Copy(io.Discard, resp.Body)
	require.Equal(t, http.StatusRequestHeaderFieldsTooLarge, resp.StatusCode)
}
