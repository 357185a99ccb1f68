package ledger

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

func TestPrice(t *testing.T) {
	t.Parallel()
	prices := Prices{
		Models:  map[string]ModelPrice{"gpt-4o": {Input: 2.5, Output: 10}, "gpt-4o-mini": {Input: 0.15, Output: 0.6}},
		Runners: map[subjects.Role]RunnerPrice{subjects.RoleImplementer: {PerCall: 0.01, PerMinute: 0.5}},
	}
	openai := func(model string, in, out int) map[string]any {
		return map[string]any{"model": model, "usage": runner.OpenAIUsage{PromptTokens: in, CompletionTokens: out, TotalTokens: in + out}}
	}
	for _, tc := range []struct {
		name string
		role subjects.Role
		md   map[string]any
		dur  time.Duration
		want Cost
	}{
		{"openai tokens at the model's price", subjects.RoleJudge, openai("gpt-4o", 1000, 200), time.Second,
			Cost{Model: "gpt-4o", InputTokens: 1000, OutputTokens: 200, USD: 0.0045, WallMS: 1000, Priced: PricedTokens}},
		{"a dated model takes the longest prefix", subjects.RoleJudge, openai("gpt-4o-mini-2024-07-18", 1e6, 1e6), 0,
			Cost{Model: "gpt-4o-mini-2024-07-18", InputTokens: 1e6, OutputTokens: 1e6, USD: 0.75, Priced: PricedTokens}},
		{"decoded from JSON, as the cache holds it", subjects.RoleJudge,
			decoded(t, `{"model":"gpt-4o","usage":{"prompt_tokens":2000,"completion_tokens":0}}`), 0,
			Cost{Model: "gpt-4o", InputTokens: 2000, USD: 0.005, Priced: PricedTokens}},
		{"an agent's reported cost wins", subjects.RoleImplementer,
			map[string]any{"usage": map[string]any{"input_tokens": 10.0, "output_tokens": 5.0}, "cost_usd": 0.25}, time.Minute,
			Cost{InputTokens: 10, OutputTokens: 5, USD: 0.25, WallMS: 60000, Priced: PricedReported}},
		{"an exec agent's usage, as the exec runner records it", subjects.RoleJudge,
			map[string]any{"model": "gpt-4o", "usage": map[string]any{"input_tokens": int64(1000), "output_tokens": int64(100)}}, 0,
			Cost{Model: "gpt-4o", InputTokens: 1000, OutputTokens: 100, USD: 0.0035, Priced: PricedTokens}},
		{"a runner priced per call and minute", subjects.RoleImplementer, nil, 2 * time.Minute,
			Cost{USD: 1.01, WallMS: 120000, Priced: PricedRunner}},
		{"an unknown model with no runner price", subjects.RolePlanner, openai("llama", 100, 100), time.Second,
			Cost{Model: "llama", InputTokens: 100, OutputTokens: 100, WallMS: 1000, Priced: PricedNone}},
		{"nothing reported, wall time only", subjects.RoleJudge, nil, 1500 * time.Millisecond,
			Cost{WallMS: 1500, Priced: PricedNone}},
		{"nonsense numbers are ignored", subjects.RoleJudge,
			map[string]any{"usage": map[string]any{"input_tokens": -5.0, "output_tokens": "many"}, "cost_usd": -1.0}, 0,
			Cost{Priced: PricedNone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := prices.Price(tc.role, runner.Result{Metadata: tc.md}, tc.dur)
			assert.InDelta(t, tc.want.USD, got.USD, 1e-12)
			got.USD = tc.want.USD
			assert.Equal(t, tc.want, got)
		})
	}
}

func TestSavedAndLedger(t *testing.T) {
	t.Parallel()
	l, err := New(Deps{}, Prices{Models: map[string]ModelPrice{"m": {Input: 1, Output: 2}}})
	require.NoError(t, err)
	res := runner.Result{Metadata: map[string]any{"model": "m", "usage": map[string]any{"prompt_tokens": 1e6, "completion_tokens": 1e6}}}
	ran := l.Cost(subjects.RoleJudge, res, time.Second, false)
	assert.InDelta(t, 3.0, ran.USD, 1e-12)
	assert.Zero(t, ran.SavedUSD)
	hit := l.Cost(subjects.RoleJudge, res, 0, true)
	assert.Zero(t, hit.USD, "a hit spends nothing")
	assert.InDelta(t, 3.0, hit.SavedUSD, 1e-12, "and saves what the call cost")
	assert.Zero(t, hit.InputTokens+hit.OutputTokens, "a hit uses no tokens")

	raw, err := json.Marshal(map[string]any{MetaKey: hit, "model": "m"})
	require.NoError(t, err)
	back, ok := FromMetadata(raw)
	require.True(t, ok)
	assert.Equal(t, hit, back)
	_, ok = FromMetadata(json.RawMessage(`{}`))
	assert.False(t, ok)
}

func TestPricesValidate(t *testing.T) {
	t.Parallel()
	require.NoError(t, Prices{}.Validate())
	require.ErrorContains(t, Prices{Models: map[string]ModelPrice{"m": {Input: -1}}}.Validate(), "prices.models.m")
	require.ErrorContains(t, Prices{Runners: map[subjects.Role]RunnerPrice{"boss": {}}}.Validate(), "prices.runners.boss")
}

func decoded(t *testing.T, s string) map[string]any {
	var m map[string]any
	require.NoError(t, json.Unmarshal([]byte(s), &m))
	return m
}
