// Package ledger prices role calls and keeps the spend of tasks and
// workflows: every role event carries its Cost in its metadata, a cache
// hit carries what it saved, and budgets stop a task or pause a workflow
// before a role starts once the spend so far says it would go over.
package ledger

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"
	"time"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// MetaKey is the key of a role event's metadata that holds its Cost.
const MetaKey = "cost"

// Where a Cost's USD came from.
const (
	// PricedReported: the agent reported its own cost (total_cost_usd).
	PricedReported = "reported"
	// PricedTokens: the tokens at the model's configured price.
	PricedTokens = "tokens"
	// PricedRunner: the role's runner is priced per call and per minute.
	PricedRunner = "runner"
	// PricedNone: no price applies; the tokens and wall time are kept.
	PricedNone = "none"
)

// Cost is what one role call cost.
type Cost struct {
	// Model is the model the runner reported (openai) or "" (exec, sim).
	Model        string `json:"model,omitempty"`
	InputTokens  int64  `json:"input_tokens"`
	OutputTokens int64  `json:"output_tokens"`
	// USD is the money spent by this call: 0 for a cache hit.
	USD float64 `json:"usd"`
	// SavedUSD is, for a cache hit, the cost of the call it replaced.
	SavedUSD float64 `json:"saved_usd,omitempty"`
	// WallMS is the runner's wall time (0 for a cache hit).
	WallMS int64 `json:"wall_ms"`
	// Priced says where USD came from (PricedReported, ...).
	Priced string `json:"priced"`
}

// ModelPrice is a model's price in USD per million tokens.
type ModelPrice struct {
	Input  float64 `yaml:"input" json:"input"`
	Output float64 `yaml:"output" json:"output"`
}

// RunnerPrice prices a role's runner by the call and by the minute of
// wall time, for runners that report neither tokens nor cost.
type RunnerPrice struct {
	PerCall   float64 `yaml:"per_call" json:"per_call"`
	PerMinute float64 `yaml:"per_minute" json:"per_minute"`
}

// Prices is the prices part of the configuration.
type Prices struct {
	// Models by name; a reported model name matches its exact entry, else
	// the longest entry it starts with ("gpt-4o" prices
	// "gpt-4o-2024-08-06").
	Models map[string]ModelPrice `yaml:"models"`
	// Runners prices a role's runner (planner, implementer, judge) per call
	// and per minute; it applies when the call reported no cost and no
	// priced tokens.
	Runners map[subjects.Role]RunnerPrice `yaml:"runners"`
}

// Validate checks that every price is a finite number, not negative.
func (p Prices) Validate() error {
	bad := func(v float64) bool { return v < 0 || math.IsNaN(v) || math.IsInf(v, 0) }
	for name, m := range p.Models {
		if strings.TrimSpace(name) == "" {
			return errors.New("prices.models: empty model name")
		}
		if bad(m.Input) || bad(m.Output) {
			return fmt.Errorf("prices.models.%s: prices must be numbers of 0 or more", name)
		}
	}
	for role, r := range p.Runners {
		if !role.Valid() {
			return fmt.Errorf("prices.runners.%s: want planner, implementer or judge", role)
		}
		if bad(r.PerCall) || bad(r.PerMinute) {
			return fmt.Errorf("prices.runners.%s: prices must be numbers of 0 or more", role)
		}
	}
	return nil
}

// model returns the price of a model name (see Models).
func (p Prices) model(name string) (ModelPrice, bool) {
	l := p.label(name)
	m, ok := p.Models[l]
	return m, ok
}

// Price prices one call of role that returned res after dur. The usage
// comes from res.Metadata: "usage" with prompt_tokens/completion_tokens
// (openai) or input_tokens/output_tokens (an agent's JSON result), and
// "cost_usd" when the agent reported its cost.
func (p Prices) Price(role subjects.Role, res runner.Result, dur time.Duration) Cost {
	u := UsageOf(res.Metadata)
	c := Cost{Model: u.Model, InputTokens: u.Input, OutputTokens: u.Output, WallMS: dur.Milliseconds(), Priced: PricedNone}
	mp, priced := p.model(u.Model)
	switch {
	case u.HasCost:
		c.USD, c.Priced = u.CostUSD, PricedReported
	case priced && u.Model != "" && (u.Input > 0 || u.Output > 0):
		c.USD = (float64(u.Input)*mp.Input + float64(u.Output)*mp.Output) / 1e6
		c.Priced = PricedTokens
	default:
		if rp, ok := p.Runners[role]; ok {
			c.USD = rp.PerCall + rp.PerMinute*dur.Minutes()
			c.Priced = PricedRunner
		}
	}
	return c
}

// Saved prices a cache hit: it spent nothing, used no tokens, and saved
// what the cached call cost (at today's prices).
func (p Prices) Saved(role subjects.Role, res runner.Result) Cost {
	var wall time.Duration
	if ms, ok := res.Metadata["wall_ms"].(float64); ok {
		wall = time.Duration(ms) * time.Millisecond
	}
	c := p.Price(role, res, wall)
	c.SavedUSD, c.USD, c.WallMS = c.USD, 0, 0
	c.InputTokens, c.OutputTokens = 0, 0
	return c
}

// Usage is what a runner reported about a call.
type Usage struct {
	Model         string
	Input, Output int64
	CostUSD       float64
	HasCost       bool
}

// UsageOf reads the usage a runner put in its result's metadata. It
// accepts the decoded forms (a map from JSON) and the runners' own types.
func UsageOf(md map[string]any) Usage {
	var u Usage
	if md == nil {
		return u
	}
	if m, ok := md["model"].(string); ok {
		u.Model = m
	}
	var usage map[string]any
	switch v := md["usage"].(type) {
	case map[string]any:
		usage = v
	case nil:
	default: // a runner's own type: through JSON
		if b, err := json.Marshal(v); err == nil {
			_ = json.Unmarshal(b, &usage)
		}
	}
	num := func(m map[string]any, keys ...string) int64 {
		for _, k := range keys {
			var f float64
			switch v := m[k].(type) {
			case float64:
				f = v
			case int64:
				f = float64(v)
			case int:
				f = float64(v)
			}
			if f > 0 && f < 1e15 {
				return int64(f)
			}
		}
		return 0
	}
	u.Input = num(usage, "prompt_tokens", "input_tokens")
	u.Output = num(usage, "completion_tokens", "output_tokens")
	if f, ok := md["cost_usd"].(float64); ok && f >= 0 && f < 1e9 {
		u.CostUSD, u.HasCost = f, true
	}
	return u
}

// FromMetadata reads the Cost of a role event's metadata.
func FromMetadata(raw json.RawMessage) (Cost, bool) {
	var md struct {
		Cost *Cost `json:"cost"`
	}
	if len(raw) == 0 || json.Unmarshal(raw, &md) != nil || md.Cost == nil {
		return Cost{}, false
	}
	return *md.Cost, true
}

// Budgets are the default spend limits in USD; zero means no limit. A
// task's request can set its own (metadata budget_usd), and a workflow's
// its own (metadata workflow_budget_usd of any of its requests, the
// board's budget column).
type Budgets struct {
	// TaskUSD limits one task's spend over all its rounds and retries.
	TaskUSD float64 `yaml:"task_usd" json:"task_usd"`
	// WorkflowUSD limits a workflow's spend, fleet-wide.
	WorkflowUSD float64 `yaml:"workflow_usd" json:"workflow_usd"`
}

// Validate checks the limits are finite and not negative.
func (b Budgets) Validate() error {
	for name, v := range map[string]float64{"budgets.task_usd": b.TaskUSD, "budgets.workflow_usd": b.WorkflowUSD} {
		if v < 0 || math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: %v must be a number of 0 or more", name, v)
		}
	}
	return nil
}
