package tests

import (
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/ops"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// Row 23, the admin: a user outside the profiles updates the audit stream
// while a worker runs, adding max_age (events would expire). Within a
// watchdog tick the worker says so without any probe: an error in its log,
// drover_audit_stream_weakened 1, and /readyz's reason naming max_age; it
// keeps completing tasks (each still writes its whole record). drover audit
// verify names the setting (stream-config). Once the setting is removed,
// all three clear; O.
func TestFaultAuditStreamWeakenedWhileRunning(t *testing.T) {
	t.Parallel()
	b := setup(t)
	logs := &cliBuffer{}
	m := ops.NewMetrics()
	w := b.startWorker(worker.Config{
		Concurrency: 2, Runners: runner.SimSet(runner.NewSim(runner.SimOptions{})), Metrics: m,
		Log: slog.New(slog.NewTextHandler(logs, nil)), Watchdog: 100 * time.Millisecond,
	})
	b.waitTerminal("wf-weak", b.submit(task("wf-weak", "T1")), 1)
	require.NoError(t, w.CheckReady())
	require.Zero(t, metric(t, m.Registry, "drover_audit_stream_weakened"))

	ctx := context.Background()
	st, err := b.js.Stream(ctx, b.names.AuditStream())
	require.NoError(t, err)
	cfg := st.CachedInfo().Config
	cfg.MaxAge = 24 * time.Hour
	_, err = b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err, "an admin outside the profiles may update the stream")

	awaitMetric(t, m.Registry, 1, "drover_audit_stream_weakened")
	require.Eventually(t, func() bool { return strings.Contains(logs.String(), "the audit stream was weakened") }, 10*time.Second, 20*time.Millisecond)
	require.Eventually(t, func() bool {
		err := w.CheckReady()
		return err != nil && strings.Contains(err.Error(), "max_age")
	}, 10*time.Second, 20*time.Millisecond, "/readyz names max_age")
	got := b.waitTerminal("wf-weak", b.submit(task("wf-weak", "T2")), 1)
	require.Equal(t, subjects.EventTaskCompleted, got["T2"].EventType, "the worker keeps completing tasks")

	rep, err := audit.Verify(ctx, b.js, b.names, audit.VerifyOptions{StreamCheck: broker.CheckAudit})
	require.NoError(t, err)
	require.Equal(t, 1, rep.ViolationCount, "violations: %v", rep.Violations)
	require.Equal(t, audit.RuleStreamConfig, rep.First.Rule)
	require.Contains(t, rep.First.Detail, "max_age")

	cfg.MaxAge = 0
	_, err = b.js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	awaitMetric(t, m.Registry, 0, "drover_audit_stream_weakened")
	require.Eventually(t, func() bool { return w.CheckReady() == nil }, 10*time.Second, 20*time.Millisecond)
	require.Contains(t, logs.String(), "append-only again")
	b.oracle()
}
