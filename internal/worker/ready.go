package worker

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/redact"
)

// The phases of a worker's life, in order.
const (
	phaseNew int32 = iota
	phaseStarting
	phaseRunning
	phaseDraining
	phaseStopped
)

// jsProbeTimeout bounds one JetStream readiness check.
const jsProbeTimeout = 2 * time.Second

// CheckReady reports whether the worker should get work (nil) or why not.
// It is ready when it has started, is not draining, its connection is up,
// its workflow gate's watch runs, its dependencies (the workspace
// repository, Config.Dependencies and the runners' health checks) answer, every queue's fetch loop runs, and
// JetStream answers for the audit and
// DLQ streams, the state bucket and every queue's consumer (which lives on
// the tasks stream). That last check is reused for Config.ReadyCache, so a
// storm of probes costs the server one round of requests.
func (w *Worker) CheckReady() error {
	switch w.phase.Load() {
	case phaseNew, phaseStarting:
		return errors.New("starting: provisioning streams and consumers")
	case phaseDraining:
		return fmt.Errorf("draining: fetching stopped, tasks in flight: %d", w.pool.Stats().InFlight)
	case phaseStopped:
		return errors.New("stopped")
	}
	if st := w.nc.Status(); st != nats.CONNECTED {
		return fmt.Errorf("NATS connection is %s", st)
	}
	if g := w.gate.Load(); g != nil {
		if err := g.Err(); err != nil {
			return err // roles wait until the workflow states are current
		}
	}
	if err := w.checkDependencies(); err != nil {
		return err // the consumers do not fetch meanwhile
	}
	if err := w.checkStore(); err != nil {
		return err
	}
	for i, c := range w.consumers {
		if !c.Fetching() {
			return fmt.Errorf("queue %s: fetch loop is not running", w.cfg.Queues[i])
		}
	}
	return w.checkJetStream()
}

// CheckLive reports whether the worker is alive (nil) or why not: it is
// not once a queue's consume loop, or Run itself, ended while the worker
// was not being stopped. Starting, running and draining workers are live.
func (w *Worker) CheckLive() error {
	if p := w.dead.Load(); p != nil {
		return *p
	}
	return nil
}

// died records why the worker stopped working on its own; the first
// reason is kept.
func (w *Worker) died(err error) { w.dead.CompareAndSwap(nil, &err) }

// checkJetStream runs the JetStream check, or returns the last result if
// it is recent. Concurrent callers wait for one check rather than each
// making their own.
func (w *Worker) checkJetStream() error {
	w.probeMu.Lock()
	defer w.probeMu.Unlock()
	if !w.probedAt.IsZero() && time.Since(w.probedAt) < w.cfg.ReadyCache {
		return w.probeErr
	}
	ctx, cancel := context.WithTimeout(context.Background(), jsProbeTimeout)
	defer cancel()
	w.probeErr = noQuorum(w.probeJetStream(ctx))
	w.probedAt = time.Now()
	w.reportJetStream(w.probeErr)
	return w.probeErr
}

// probeJetStream asks the server for the streams, bucket and consumers the
// worker needs.
func (w *Worker) probeJetStream(ctx context.Context) error {
	n := w.cfg.Names
	info, err := w.res.Audit.Info(ctx)
	if err != nil {
		return fmt.Errorf("JetStream: stream %s: %w", n.AuditStream(), err)
	}
	if err := w.reportAudit(broker.CheckAudit(info.Config)); err != nil {
		return err
	}
	if _, err := w.res.DLQ.Info(ctx); err != nil {
		return fmt.Errorf("JetStream: stream %s: %w", n.DLQStream(), err)
	}
	if _, err := w.res.State.Status(ctx); err != nil {
		return fmt.Errorf("JetStream: bucket %s: %w", n.StateBucket(), err)
	}
	for _, q := range w.cfg.Queues {
		if _, err := w.js.Consumer(ctx, n.TasksStream(), n.Consumer(q)); err != nil {
			return fmt.Errorf("JetStream: queue %s: consumer %s on %s: %w", q, n.Consumer(q), n.TasksStream(), err)
		}
	}
	return nil
}

// Dependency is a service the worker's tasks need: Check returns nil while
// it can be reached, or why not. Checks are cached by their owner.
type Dependency struct {
	// Name says what it is in readiness reasons ("workspace repository").
	Name  string
	Check func(ctx context.Context) error
}

// depTimeout bounds one round of dependency checks.
const depTimeout = 5 * time.Second

// dependencies are cfg's dependencies and its runners' health checks.
func dependencies(cfg Config) []Dependency {
	deps := append([]Dependency(nil), cfg.Dependencies...)
	for _, h := range cfg.Runners.HealthCheckers() {
		deps = append(deps, Dependency{Check: h.Check.Health}) // its errors name the role and endpoint
	}
	return deps
}

// checkDependencies returns the first failing dependency's error, named:
// the workspace repository (when workspaces are on), then Config.Dependencies
// and the runners' endpoints.
func (w *Worker) checkDependencies() error {
	m := w.ws.Load()
	if len(w.deps) == 0 && m == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), depTimeout)
	defer cancel()
	if m != nil {
		if err := m.Ready(ctx); err != nil {
			return repositoryDown(m.Config().Repo, err)
		}
	}
	for _, d := range w.deps {
		if err := d.Check(ctx); err != nil {
			if d.Name == "" {
				return err
			}
			return fmt.Errorf("%s: %w", d.Name, err)
		}
	}
	return nil
}

// repositoryDown is the readiness reason of an unreachable workspace
// repository. The repository's URL may carry credentials: they are masked
// in the reason, and in the error it wraps (which is logged).
func repositoryDown(repo string, err error) error {
	masked := redact.URL(repo)
	return fmt.Errorf("workspace repository %s unreachable: %w", masked, errors.New(strings.ReplaceAll(err.Error(), repo, masked)))
}

// holdFetching is the consumers' Hold: no task is fetched while a
// dependency is down.
func (w *Worker) holdFetching() error { return w.checkDependencies() }
