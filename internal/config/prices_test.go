package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/subjects"
)

func TestConfigPricesAndBudgets(t *testing.T) {
	t.Parallel()
	f, err := Parse([]byte(`
prices:
  models:
    gpt-4o: {input: 2.5, output: 10}
  runners:
    implementer: {per_call: 0.02, per_minute: 0.1}
budgets: {task_usd: 2, workflow_usd: 50}
`))
	require.NoError(t, err)
	require.Equal(t, ledger.ModelPrice{Input: 2.5, Output: 10}, f.Prices.Models["gpt-4o"])
	require.Equal(t, ledger.RunnerPrice{PerCall: 0.02, PerMinute: 0.1}, f.Prices.Runners[subjects.RoleImplementer])
	require.Equal(t, ledger.Budgets{TaskUSD: 2, WorkflowUSD: 50}, f.Budgets)

	f, err = Parse(Example)
	require.NoError(t, err)
	require.Equal(t, ledger.ModelPrice{Input: 0.15, Output: 0.6}, f.Prices.Models["gpt-4o-mini"])

	for doc, want := range map[string]string{
		"prices: {models: {m: {input: -1}}}":       "prices.models.m",
		"prices: {runners: {boss: {per_call: 1}}}": "prices.runners.boss",
		"prices: {models: {m: {inptu: 1}}}":        "unknown field inptu",
		"budgets: {task_usd: -3}":                  "budgets.task_usd",
	} {
		_, err := Parse([]byte(doc))
		require.ErrorContains(t, err, want, doc)
	}
}
