package worker

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"

	"github.com/droverhq/drover/internal/mergequeue"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/internal/workspace"
)

// checkDelivery refuses a delivery mode the worker cannot run.
func checkDelivery(cfg Config) error {
	switch {
	case cfg.Delivery == pipeline.DeliveryMerge:
		if !cfg.Workspace.Enabled() {
			return fmt.Errorf("%w: delivery merge needs workspaces (workspace.repo)", mergequeue.ErrInvalidConfig)
		}
		return cfg.Merge.Validate()
	case cfg.Delivery == "" || cfg.Delivery.Valid():
		return nil
	}
	return fmt.Errorf("%w: delivery %.40q: must be branch, merge or pull_request", mergequeue.ErrInvalidConfig, cfg.Delivery)
}

// deliveryTargets are the branches delivery moves on its own (the merge
// target, the pull-request base): no task's branch may be one of them.
func deliveryTargets(cfg Config) []string {
	var out []string
	if cfg.Merge.Target != "" {
		out = append(out, cfg.Merge.Target)
	}
	if cfg.PullRequests != nil {
		if b := baseOf(cfg.PullRequests.Config().Base, cfg.Workspace.BaseRef); b != "" {
			out = append(out, b)
		}
	}
	return out
}

// mergeDeliverer is the Deliverer of delivery merge: approved branches
// enter the queue of the configured target.
func (w *Worker) mergeDeliverer(m *workspace.Manager) pipeline.Deliverer {
	return mergequeue.Deliverer{JS: w.js, Names: mergequeue.NewNames(w.cfg.Names), Target: w.cfg.Merge.Target, Push: m}
}

// startMerger runs this worker's merger of the target until the returned
// stop is called: it merges only while it holds the target's lease.
func (w *Worker) startMerger(ctx context.Context, p *pipeline.Pipeline, st *state.Store, m *workspace.Manager) (stop func(), err error) {
	// The feedback sent back to an agent masks the repository's
	// credentials, as the workspace errors do, and the worker's secrets:
	// the check runs with the worker's environment.
	red := repoRedactor(m.Config(), w.cfg.Secrets...)
	mq, err := mergequeue.New(ctx, mergequeue.Deps{JS: w.js, Names: mergequeue.NewNames(w.cfg.Names), Repo: mergequeue.GitRepo{M: m},
		Sink: mergequeue.PipelineSink{P: p, State: st}, Holder: holderName(w.id), Redactor: red, Log: w.cfg.Log}, w.cfg.Merge)
	if err != nil {
		return nil, fmt.Errorf("merge queue: %w", err)
	}
	ctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = mq.Run(ctx)
	}()
	return func() { cancel(); <-done }, nil
}

// holderName names this merger in the merge log: the worker id and a
// random suffix, so two workers with the same id are told apart.
func holderName(id string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	return id + "-" + hex.EncodeToString(b)
}
