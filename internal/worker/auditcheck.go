package worker

import (
	"context"
	"time"
)

// AuditMetrics is what a worker's Metrics may also implement to report
// whether the audit stream's settings were found weakened (ops.Metrics
// does).
type AuditMetrics interface {
	AuditStreamWeakened(weak bool)
}

// reportAudit takes the result of checking the audit stream's settings
// (broker.CheckAudit): it logs an error when the stream becomes weakened
// (an admin outside the profiles updated it, say adding max_age) and when
// it is restored, sets the metric, and returns the error, which makes the
// worker not ready. The worker keeps running tasks: each still writes its
// whole record, and stopping would not restore the stream; the operator
// must. The caller holds probeMu.
func (w *Worker) reportAudit(err error) error {
	weak := err != nil
	if m, ok := w.cfg.Metrics.(AuditMetrics); ok {
		m.AuditStreamWeakened(weak)
	}
	if weak != w.auditWeak {
		w.auditWeak = weak
		if weak {
			w.cfg.Log.Error("the audit stream was weakened while the worker runs; events may be removed: restore its settings", "err", err)
		} else {
			w.cfg.Log.Info("the audit stream's settings are append-only again")
		}
	}
	return err
}

// watchJetStream runs the readiness check of JetStream (the streams answer,
// the audit stream is not weakened) every interval until ctx ends, so both
// are reported without a readiness probe.
func (w *Worker) watchJetStream(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		interval = 30 * time.Second // the consumers' watchdog default
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			_ = w.checkJetStream()
			_ = w.checkStore()
		}
	}
}
