package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/backoff"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Sentinel errors of Admit.
var (
	// ErrTaskBudget: the task has spent its budget, or the role about to
	// start would take it over. The task fails with reason
	// budget_exceeded and is never retried.
	ErrTaskBudget = errors.New("task budget exceeded")
	// ErrWorkflowBudget: the workflow has spent its budget. It is paused
	// with the reason; the task waits, parked, for a resume.
	ErrWorkflowBudget = errors.New("workflow budget exceeded")
)

// Metadata keys of a task request that set its budgets: the wire
// contract's, in subjects.
const (
	MetaTaskBudget     = subjects.MetaTaskBudget
	MetaWorkflowBudget = subjects.MetaWorkflowBudget
)

// Spend is a task's or a workflow's spend so far, as the spend bucket
// keeps it (one key per workflow, one per task).
type Spend struct {
	USD float64 `json:"usd"`
	// Calls counts the role calls added.
	Calls int64 `json:"calls"`
	// Last is the cost of each role's last call (tasks only): Admit's
	// estimate of the next call of that role.
	Last map[subjects.Role]float64 `json:"last,omitempty"`
}

// Bucket returns the name of the spend bucket of names.
func Bucket(names subjects.Names) string { return names.Prefix() + "_spend" }

// WorkflowKey and TaskKey are the spend bucket's keys.
func WorkflowKey(wf string) string { return subjects.IDToken(wf) }

// TaskKey is a task's key in the spend bucket.
func TaskKey(wf, task string) string { return subjects.IDToken(wf) + "." + subjects.IDToken(task) }

// OpenBucket creates the spend bucket, or returns the existing one.
func OpenBucket(ctx context.Context, js jetstream.JetStream, names subjects.Names, replicas int) (jetstream.KeyValue, error) {
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: Bucket(names), History: 1, Storage: jetstream.FileStorage, Replicas: max(replicas, 1),
		Description: "Drover: spend so far of each workflow and task, in USD",
	})
	if errors.Is(err, jetstream.ErrBucketExists) {
		kv, err = js.KeyValue(ctx, Bucket(names))
	}
	if err != nil {
		return nil, fmt.Errorf("spend bucket %s: %w", Bucket(names), err)
	}
	return kv, nil
}

// Pauser pauses a workflow with a reason (a workflow control request).
type Pauser func(ctx context.Context, workflow, reason string) error

// Keeper keeps spend fleet-wide and enforces budgets: every worker adds
// each call's cost to its task's and its workflow's key by compare-and-set,
// so no update is lost however many workers add at once.
type Keeper struct {
	kv      jetstream.KeyValue
	budgets Budgets
	pause   Pauser
	log     *slog.Logger
}

// KeeperDeps are what a Keeper works with.
type KeeperDeps struct {
	// Spend is the spend bucket (OpenBucket); required.
	Spend jetstream.KeyValue
	// Pause pauses a workflow that spent its budget; nil pauses none.
	Pause Pauser
	// Log is the Keeper's logger; nil means slog.Default().
	Log *slog.Logger
}

// NewKeeper returns a Keeper with budgets as the default limits, or an
// error naming a missing dependency or a bad limit.
func NewKeeper(deps KeeperDeps, budgets Budgets) (*Keeper, error) {
	if deps.Spend == nil {
		return nil, errors.New("ledger: KeeperDeps.Spend is required")
	}
	if err := budgets.Validate(); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	log := deps.Log
	if log == nil {
		log = slog.Default()
	}
	return &Keeper{kv: deps.Spend, budgets: budgets, pause: deps.Pause, log: log}, nil
}

// Limits returns the budgets of a request: its own, else the defaults.
func (k *Keeper) Limits(task subjects.TaskRequest) Budgets {
	b := k.budgets
	if v, ok := budgetOf(task.Metadata, MetaTaskBudget); ok {
		b.TaskUSD = v
	}
	if v, ok := budgetOf(task.Metadata, MetaWorkflowBudget); ok {
		b.WorkflowUSD = v
	}
	return b
}

func budgetOf(md map[string]json.RawMessage, key string) (float64, bool) {
	raw, ok := md[key]
	if !ok {
		return 0, false
	}
	var v float64
	if json.Unmarshal(raw, &v) != nil || v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false
	}
	return v, true
}

// Admit decides, before a role runs, whether its task and workflow may
// spend on it. It errs with ErrTaskBudget when the task has spent its
// budget or the role's estimated cost would take it over (the estimate is
// the cost of the same role's last call, and for an implementer starting
// a new round, the whole last round: implementer and judge), and with
// ErrWorkflowBudget, after pausing the workflow, when the workflow has
// spent its budget. A spend it cannot read admits the role (budgets are
// a brake, not a gate the bucket's outage should close).
func (k *Keeper) Admit(ctx context.Context, req runner.Request) error {
	b := k.Limits(req.Task)
	wf, id := req.Task.Workflow, req.Task.ID
	if b.TaskUSD > 0 {
		s, _, err := k.get(ctx, TaskKey(wf, id))
		if err != nil {
			k.log.Warn("spend: task spend unknown; role admitted", "workflow", wf, "task", id, "err", err)
		} else if est := estimate(s, req); s.USD >= b.TaskUSD || s.USD+est > b.TaskUSD {
			return fmt.Errorf("%w: %s spent $%.4f of its $%.4f budget; the next %s would cost about $%.4f",
				ErrTaskBudget, id, s.USD, b.TaskUSD, req.Role, est)
		}
	}
	if b.WorkflowUSD > 0 {
		s, _, err := k.get(ctx, WorkflowKey(wf))
		if err != nil {
			k.log.Warn("spend: workflow spend unknown; role admitted", "workflow", wf, "err", err)
		} else if s.USD >= b.WorkflowUSD {
			reason := fmt.Sprintf("%s: spent $%.4f of its $%.4f budget", ErrWorkflowBudget, s.USD, b.WorkflowUSD)
			if k.pause != nil {
				if err := k.pause(ctx, wf, reason); err != nil {
					k.log.Warn("spend: could not pause the workflow over its budget", "workflow", wf, "err", err)
				}
			}
			return fmt.Errorf("%w: %s", ErrWorkflowBudget, reason)
		}
	}
	return nil
}

// estimate is what the next call of req's role will likely cost.
func estimate(s Spend, req runner.Request) float64 {
	est := s.Last[req.Role]
	if req.Role == subjects.RoleImplementer && req.Attempt > 1 {
		est += s.Last[subjects.RoleJudge]
	}
	return est
}

// Add records a call's cost against its task and workflow.
func (k *Keeper) Add(ctx context.Context, req runner.Request, usd float64) error {
	wf, id := req.Task.Workflow, req.Task.ID
	err1 := k.update(ctx, TaskKey(wf, id), func(s *Spend) {
		s.USD += usd
		s.Calls++
		if s.Last == nil {
			s.Last = map[subjects.Role]float64{}
		}
		s.Last[req.Role] = usd
	})
	err2 := k.update(ctx, WorkflowKey(wf), func(s *Spend) {
		s.USD += usd
		s.Calls++
	})
	return errors.Join(err1, err2)
}

// Get returns the spend of a key (zero when it has none).
func (k *Keeper) Get(ctx context.Context, key string) (Spend, error) {
	s, _, err := k.get(ctx, key)
	return s, err
}

func (k *Keeper) get(ctx context.Context, key string) (Spend, uint64, error) {
	e, err := k.kv.Get(ctx, key)
	if errors.Is(err, jetstream.ErrKeyNotFound) {
		return Spend{}, 0, nil
	}
	if err != nil {
		return Spend{}, 0, err
	}
	var s Spend
	if err := json.Unmarshal(e.Value(), &s); err != nil {
		return Spend{}, 0, fmt.Errorf("spend %s: %w", key, err)
	}
	return s, e.Revision(), nil
}

// update applies f to a key by compare-and-set, again on a conflict.
func (k *Keeper) update(ctx context.Context, key string, f func(*Spend)) error {
	for try := 0; try < 64; try++ {
		s, rev, err := k.get(ctx, key)
		if err != nil {
			return err
		}
		f(&s)
		b, err := json.Marshal(s)
		if err != nil {
			return err
		}
		if rev == 0 {
			_, err = k.kv.Create(ctx, key, b)
		} else {
			_, err = k.kv.Update(ctx, key, b, rev)
		}
		if err == nil {
			return nil
		}
		if !errors.Is(err, jetstream.ErrKeyExists) && !errors.Is(err, jetstream.ErrKeyRevisionMismatch) {
			return fmt.Errorf("spend %s: %w", key, err)
		}
		if err := backoff.Sleep(ctx, time.Duration(try+1)*time.Millisecond); err != nil {
			return err
		}
	}
	return fmt.Errorf("spend %s: kept conflicting", key)
}

// FleetSpend sums the spend of every workflow in the spend bucket: the
// total and the number of workflows. A missing bucket is no spend.
func FleetSpend(ctx context.Context, js jetstream.JetStream, names subjects.Names) (usd float64, workflows int, err error) {
	kv, err := js.KeyValue(ctx, Bucket(names))
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, err
	}
	keys, err := kv.ListKeys(ctx)
	if err != nil {
		return 0, 0, err
	}
	defer func() { _ = keys.Stop() }()
	k := &Keeper{kv: kv}
	for key := range keys.Keys() {
		if strings.Contains(key, ".") {
			continue // a task's key
		}
		s, err := k.Get(ctx, key)
		if err != nil {
			return 0, 0, err
		}
		usd += s.USD
		workflows++
	}
	return usd, workflows, nil
}
