package ledger

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Ledger prices role calls (it implements pipeline.Ledger) and counts
// tokens and money in Prometheus.
type Ledger struct {
	prices  Prices
	metrics *Metrics
	keeper  *Keeper // nil: no spend kept, no budgets
}

// Deps are what a ledger works with; both may be nil.
type Deps struct {
	// Metrics counts tokens and money (NewMetrics); nil counts nothing.
	Metrics *Metrics
	// Keeper keeps the fleet-wide spend and enforces budgets (NewKeeper);
	// nil keeps no spend and enforces no budget.
	Keeper *Keeper
}

// New returns a ledger pricing with prices, or an error naming a bad
// price.
func New(deps Deps, prices Prices) (*Ledger, error) {
	if err := prices.Validate(); err != nil {
		return nil, fmt.Errorf("ledger: %w", err)
	}
	return &Ledger{prices: prices, metrics: deps.Metrics, keeper: deps.Keeper}, nil
}

// Cost implements pipeline.Ledger.
func (l *Ledger) Cost(role subjects.Role, res runner.Result, dur time.Duration, cached bool) Cost {
	var c Cost
	if cached {
		c = l.prices.Saved(role, res)
	} else {
		c = l.prices.Price(role, res, dur)
	}
	l.metrics.add(role, l.prices.label(c.Model), c)
	return c
}

// label is a model's metric label: its configured name, so that the
// label's values are bounded by the configuration, not by what a server
// reports; "unpriced" for any other model, "" for none.
func (p Prices) label(model string) string {
	if model == "" {
		return ""
	}
	if _, ok := p.Models[model]; ok {
		return model
	}
	best := ""
	for n := range p.Models {
		if len(n) > len(best) && len(model) >= len(n) && model[:len(n)] == n {
			best = n
		}
	}
	if best == "" {
		return "unpriced"
	}
	return best
}

// Metrics are the ledger's Prometheus counters.
type Metrics struct {
	tokens *prometheus.CounterVec
	usd    *prometheus.CounterVec
	saved  *prometheus.CounterVec
}

// NewMetrics registers the ledger's counters on r.
func NewMetrics(r prometheus.Registerer) *Metrics {
	m := &Metrics{
		tokens: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_tokens_total", Help: "Tokens used by role calls, by role, model and direction (input or output).",
		}, []string{"role", "model", "direction"}),
		usd: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_cost_usd_total", Help: "Money spent on role calls, in USD, by role and model.",
		}, []string{"role", "model"}),
		saved: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "drover_cost_saved_usd_total", Help: "Money the cache saved, in USD: the cost of the calls cache hits replaced.",
		}, []string{"role", "model"}),
	}
	r.MustRegister(m.tokens, m.usd, m.saved)
	return m
}

func (m *Metrics) add(role subjects.Role, model string, c Cost) {
	if m == nil {
		return
	}
	if c.SavedUSD > 0 {
		m.saved.WithLabelValues(string(role), model).Add(c.SavedUSD)
		return // a hit used no tokens
	}
	m.tokens.WithLabelValues(string(role), model, "input").Add(float64(c.InputTokens))
	m.tokens.WithLabelValues(string(role), model, "output").Add(float64(c.OutputTokens))
	m.usd.WithLabelValues(string(role), model).Add(c.USD)
}

// Admit implements pipeline.Ledger: see Keeper.Admit (nil without a
// keeper).
func (l *Ledger) Admit(ctx context.Context, req runner.Request) error {
	if l.keeper == nil {
		return nil
	}
	return l.keeper.Admit(ctx, req)
}

// Spent implements pipeline.Ledger: it adds a call's cost to its task's
// and workflow's spend. A failure is logged: the call is done either way.
func (l *Ledger) Spent(ctx context.Context, req runner.Request, c Cost) {
	if l.keeper == nil || c.USD <= 0 {
		return
	}
	if err := l.keeper.Add(ctx, req, c.USD); err != nil {
		l.keeper.log.Warn("spend: not recorded", "workflow", req.Task.Workflow, "task", req.Task.ID, "role", req.Role, "usd", c.USD, "err", err)
	}
}
