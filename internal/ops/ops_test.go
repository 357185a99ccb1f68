package ops_test

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/ops"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/subjects"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

var _ pipeline.Metrics = (*ops.Metrics)(nil)

type testBundle struct {
	t       *testing.T
	srv     *ops.Server
	metrics *ops.Metrics
	ready   atomic.Bool
	client  *http.Client
	cancel  context.CancelFunc
	served  chan error
	logs    *syncBuffer // the server's log
}

// syncBuffer is a bytes.Buffer the server's goroutines can write to.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// setup listens on a free port and serves until the test ends.
func setup(t *testing.T) *testBundle {
	t.Helper()
	tb := &testBundle{t: t, metrics: ops.NewMetrics(), logs: &syncBuffer{}}
	tb.client = &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	ready := func() error {
		if !tb.ready.Load() {
			return errors.New("audit stream not provisioned yet")
		}
		return nil
	}
	tb.serve(ops.Listen("127.0.0.1:0", func() error { return nil }, ready, tb.metrics.Registry, ops.WithLog(tb.log())))
	return tb
}

// log is a logger into tb.logs.
func (tb *testBundle) log() *slog.Logger { return slog.New(slog.NewTextHandler(tb.logs, nil)) }

// serve serves srv until the test ends.
func (tb *testBundle) serve(srv *ops.Server, err error) {
	t := tb.t
	t.Helper()
	require.NoError(t, err)
	tb.srv, tb.served = srv, make(chan error, 1)
	ctx, cancel := context.WithCancel(context.Background())
	tb.cancel = cancel
	go func() { tb.served <- srv.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		_ = natstest.Recv(t, tb.served, 30*time.Second)
	})
}

func (tb *testBundle) get(path string) (int, string) {
	tb.t.Helper()
	resp, err := tb.client.Get("http://" + tb.srv.Addr() + path)
	require.NoError(tb.t, err)
	defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
	body, err := io.ReadAll(resp.Body)
	require.NoError(tb.t, err)
	return resp.StatusCode, string(body)
}

// series parses the text exposition into "name{labels}" -> value.
func (tb *testBundle) series() map[string]float64 {
	tb.t.Helper()
	code, body := tb.get("/metrics")
	require.Equal(tb.t, http.StatusOK, code)
	out := map[string]float64{}
	sc := bufio.NewScanner(strings.NewReader(body))
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		require.Positive(tb.t, i, "metric line %q", line)
		v, err := strconv.ParseFloat(line[i+1:], 64)
		require.NoError(tb.t, err, "metric line %q", line)
		out[line[:i]] = v
	}
	require.NoError(tb.t, sc.Err())
	return out
}

func TestLivez(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	code, body := tb.get("/livez")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)
}

func TestReadyzFollowsProbe(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	code, body := tb.get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
	require.Equal(t, "not ready: audit stream not provisioned yet\n", body)

	tb.ready.Store(true)
	code, body = tb.get("/readyz")
	require.Equal(t, http.StatusOK, code)
	require.Equal(t, "ok\n", body)

	tb.ready.Store(false)
	code, _ = tb.get("/readyz")
	require.Equal(t, http.StatusServiceUnavailable, code)
}

func TestMetricsMove(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	m := tb.metrics

	before := tb.series()
	for _, name := range []string{"go_goroutines", "process_cpu_seconds_total"} {
		require.Contains(t, before, name, "the Go and process collectors are registered")
	}
	// Counters with no labels are exposed from the start.
	require.Equal(t, 0.0, before["drover_cache_put_failures_total"])
	require.Equal(t, 0.0, before["drover_audit_publish_seconds_count"])

	m.RoleDone(subjects.RolePlanner, "sim", false, 20*time.Millisecond, nil)
	m.RoleDone(subjects.RolePlanner, "sim", false, 30*time.Millisecond, errors.New("boom"))
	m.RoleDone(subjects.RoleJudge, "sim", true, 0, nil)
	m.TaskDone(subjects.EventTaskCompleted)
	m.TaskDone(subjects.EventTaskCompleted)
	m.TaskDone(subjects.EventTaskFailed)
	m.CachePutFailed()
	m.AuditPublished(2 * time.Millisecond)
	m.AuditPublished(3 * time.Millisecond)
	m.RoleGap(subjects.RoleImplementer, 2*time.Millisecond)
	m.RoleGap(subjects.RoleJudge, time.Millisecond)
	m.SubmitToStart(15 * time.Millisecond)

	got := tb.series()
	want := map[string]float64{
		`drover_tasks_total{outcome="task_completed"}`:                               2,
		`drover_tasks_total{outcome="task_failed"}`:                                  1,
		`drover_cache_lookups_total{result="miss",role="planner"}`:                   2,
		`drover_cache_lookups_total{result="hit",role="judge"}`:                      1,
		`drover_runner_calls_total{result="ok",role="planner",runner="sim"}`:         1,
		`drover_runner_calls_total{result="error",role="planner",runner="sim"}`:      1,
		`drover_role_duration_seconds_count{role="planner",runner="sim"}`:            2,
		`drover_role_duration_seconds_sum{role="planner",runner="sim"}`:              0.05,
		`drover_role_duration_seconds_bucket{role="planner",runner="sim",le="+Inf"}`: 2,
		`drover_cache_put_failures_total`:                                            1,
		`drover_audit_publish_seconds_count`:                                         2,
		`drover_audit_publish_seconds_sum`:                                           0.005,
		`drover_role_gap_seconds_count{role="implementer"}`:                          1,
		`drover_role_gap_seconds_sum{role="implementer"}`:                            0.002,
		`drover_role_gap_seconds_count{role="judge"}`:                                1,
		`drover_submit_to_start_seconds_count`:                                       1,
		`drover_submit_to_start_seconds_sum`:                                         0.015,
	}
	for name, v := range want {
		require.Contains(t, got, name)
		require.InDelta(t, v, got[name], 1e-9, name)
	}
	// A cache hit runs no runner, so it observes no duration.
	for name := range got {
		if strings.HasPrefix(name, "drover_runner_calls_total") || strings.HasPrefix(name, "drover_role_duration_seconds") {
			require.NotContains(t, name, `role="judge"`)
		}
	}
}

func TestServeStopsOnCancel(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	code, _ := tb.get("/livez")
	require.Equal(t, http.StatusOK, code)

	tb.cancel()
	select {
	case err := <-tb.served:
		require.NoError(t, err)
		tb.served <- err // for the cleanup
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after its context ended")
	}
	_, err := tb.client.Get("http://" + tb.srv.Addr() + "/livez")
	require.Error(t, err, "the listener is closed")
}

func TestListenBusyAddress(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	_, err := ops.Listen(tb.srv.Addr(), nil, nil, tb.metrics.Registry)
	require.Error(t, err)
	require.Contains(t, err.Error(), tb.srv.Addr())
}
