package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// drover cost sums metadata.cost over the record, grouped as asked, with
// the cache's saving; audit --summary ends with the workflow's spend.
func TestCostCommand(t *testing.T) {
	t.Parallel()
	srv, _, js, _ := natstest.Provisioned(t, natstest.Sync(time.Minute))
	pub := audit.NewPublisher(js, subjects.MustNames(subjects.DefaultPrefix))
	ctx := context.Background()
	n := 0
	publish := func(wf, task string, et subjects.EventType, actor subjects.Actor, input any, cost *ledger.Cost, cached bool) {
		n++
		ev := &subjects.AuditEvent{EventID: fmt.Sprintf("e%d", n), EventType: et, WorkflowID: wf, TaskID: task, Actor: actor,
			Attempt: 1, Timestamp: time.Now().UTC(), Status: subjects.StatusSuccess, Cached: cached}
		if input != nil {
			ev.Input, _ = json.Marshal(input)
		}
		if cost != nil {
			ev.Metadata, _ = json.Marshal(map[string]any{ledger.MetaKey: cost})
		}
		_, err := pub.PublishEvent(ctx, ev, "", false, 0)
		require.NoError(t, err)
	}
	for _, wf := range []string{"wf1", "wf2"} {
		publish(wf, "T1", subjects.EventTaskAccepted, subjects.ActorSystem, map[string]string{"type": "bugfix"}, nil, false)
		publish(wf, "T1", subjects.EventPlannerDecision, subjects.ActorOf(subjects.RolePlanner), nil,
			&ledger.Cost{Model: "m", InputTokens: 100, OutputTokens: 10, USD: 0.25, Priced: ledger.PricedTokens}, false)
		publish(wf, "T1", subjects.EventJudgeVerdict, subjects.ActorOf(subjects.RoleJudge), nil,
			&ledger.Cost{Model: "m", SavedUSD: 0.5, Priced: ledger.PricedTokens}, true)
	}
	code, out, errOut := runCLI(t, "cost", "--json", "--by", "workflow,type", "--nats-url", srv.ClientURL())
	require.Equal(t, 0, code, errOut)
	var rep struct {
		Rows []struct {
			Workflow, Type string
			USD            float64 `json:"usd"`
		}
		Total ledger.Totals
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Len(t, rep.Rows, 2)
	require.Equal(t, "bugfix", rep.Rows[0].Type)
	require.InDelta(t, 0.5, rep.Total.USD, 1e-12)
	require.InDelta(t, 1.0, rep.Total.SavedUSD, 1e-12)
	require.EqualValues(t, 2, rep.Total.Calls)
	require.EqualValues(t, 2, rep.Total.CacheHits)
	require.EqualValues(t, 200, rep.Total.InputTokens)

	code, out, errOut = runCLI(t, "cost", "--workflow", "wf1", "--by", "role", "--nats-url", srv.ClientURL())
	require.Equal(t, 0, code, errOut)
	require.Regexp(t, `planner\s+1\s+0\s+100\s+10\s+0\.2500\s+0\.0000`, out)
	require.Regexp(t, `TOTAL\s+1\s+1\s+100\s+10\s+0\.2500\s+0\.5000`, out)

	code, out, errOut = runCLI(t, "audit", "--workflow", "wf2", "--summary", "--nats-url", srv.ClientURL())
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "spend: $0.2500 over 1 calls (100 input, 10 output tokens); saved by the cache: $0.5000 over 1 hits")

	code, _, errOut = runCLI(t, "cost", "--by", "colour", "--nats-url", srv.ClientURL())
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `group by "colour"`)
}
