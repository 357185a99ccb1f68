package pipeline

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Ledger prices role results for their events and keeps budgets (see
// package ledger).
type Ledger interface {
	// Cost is the cost of a role's result: of the call that ran for dur,
	// or, for a cache hit, what the hit saved.
	Cost(role subjects.Role, res runner.Result, dur time.Duration, cached bool) ledger.Cost
	// Admit is asked before a role's runner starts (a cache hit spends
	// nothing and is not asked). ledger.ErrTaskBudget fails the task with
	// reason budget_exceeded; ledger.ErrWorkflowBudget (the workflow is
	// being paused) hands the task back, to be parked.
	Admit(ctx context.Context, req runner.Request) error
	// Spent adds a call's cost to its task's and workflow's spend.
	Spent(ctx context.Context, req runner.Request, c ledger.Cost)
}

// eventMetadata is a role event's metadata: the runner's, with the cost
// under ledger.MetaKey when the pipeline has a ledger.
func (p *Pipeline) eventMetadata(rr roleResult) map[string]any {
	md := rr.res.Metadata
	if p.d.Ledger == nil {
		return md
	}
	md = maps.Clone(md)
	if md == nil {
		md = make(map[string]any, 1)
	}
	md[ledger.MetaKey] = rr.cost
	return md
}

// admit asks the ledger whether role may start; the error says how the
// task goes on (see Ledger.Admit).
func (p *Pipeline) admit(ctx context.Context, req runner.Request) error {
	if p.d.Ledger == nil {
		return nil
	}
	err := p.d.Ledger.Admit(ctx, req)
	if errors.Is(err, ledger.ErrTaskBudget) {
		return runner.Permanentf("%s: not started: %w", req.Role, err)
	}
	if err != nil {
		return fmt.Errorf("%s: not started: %w", req.Role, err)
	}
	return nil
}

// price records the cost of a role's result in rr, and a call's cost in
// the ledger's spend.
func (p *Pipeline) price(ctx context.Context, req runner.Request, rr *roleResult) {
	if p.d.Ledger == nil {
		return
	}
	rr.cost = p.d.Ledger.Cost(rr.role, rr.res, rr.dur, rr.cached)
	if !rr.cached {
		p.d.Ledger.Spent(ctx, req, rr.cost)
	}
}

// failReason is the DLQ reason of a role error that fails its task.
func failReason(err error) subjects.Reason {
	if errors.Is(err, ledger.ErrTaskBudget) {
		return subjects.ReasonBudgetExceeded
	}
	return subjects.ReasonRoleFailed
}
