package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/subjects"
)

// costFlags are the flags of `drover cost`.
type costFlags struct {
	workflow, since, until string
	by                     []string
	json                   bool
}

func newCostCmd(g *globals) *cobra.Command {
	var f costFlags
	cmd := &cobra.Command{
		Use:   "cost",
		Short: "Show tokens and money spent per workflow, task type, role and model, and what the cache saved",
		Long: `Sum the cost every role event records (metadata.cost: tokens, USD, and for a cache
hit the USD it saved) over the audit record, grouped by --by (any of workflow, type,
role, model; default all four), with a total. --workflow, --since and --until narrow
the events read, as in drover audit. Costs are priced by the worker when the role ran,
with the prices of its configuration (see drover config example, "prices").`,
		Example: `  drover cost --since 24h
  drover cost --workflow board-T1 --by role,model
  drover cost --by workflow --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runCost(cmd.Context(), g, f)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workflow, "workflow", "", "only this workflow")
	fl.StringVar(&f.since, "since", "", "from this RFC 3339 time, or this long ago (e.g. 24h)")
	fl.StringVar(&f.until, "until", "", "until this RFC 3339 time, or this long ago")
	fl.StringSliceVar(&f.by, "by", ledger.Dimensions, "group by these, comma-separated: workflow, type, role, model")
	fl.BoolVar(&f.json, "json", false, "print the report as JSON")
	return cmd
}

func runCost(ctx context.Context, g *globals, f costFlags) error {
	af := auditFlags{workflow: f.workflow, since: f.since, until: f.until}
	q, err := af.query(time.Now())
	if err != nil {
		return err
	}
	rep, err := ledger.NewReport(f.by)
	if err != nil {
		return fmt.Errorf("--by: %w", err)
	}
	c, err := g.connect(ctx, "cost")
	if err != nil {
		return err
	}
	defer c.Close()
	skipped := 0
	err = audit.Replay(ctx, c.js, g.names, q, func(r audit.Record) error {
		if r.Err != nil {
			skipped++
			return nil
		}
		rep.Add(&r.Event)
		return nil
	})
	if err != nil {
		return auditStreamErr(g, err)
	}
	if skipped > 0 {
		fmt.Fprintf(g.stderr, "drover: skipped %d events that do not decode\n", skipped)
	}
	if f.json {
		return rep.WriteJSON(g.stdout)
	}
	return rep.WriteTable(g.stdout)
}

// spendLine sums up a cost total in one line, for summaries.
func spendLine(t ledger.Totals) string {
	return fmt.Sprintf("spend: $%.4f over %d calls (%d input, %d output tokens); saved by the cache: $%.4f over %d hits",
		t.USD, t.Calls, t.InputTokens, t.OutputTokens, t.SavedUSD, t.CacheHits)
}

// writeFleetSpend prints the fleet's spend, from the spend bucket.
func writeFleetSpend(ctx context.Context, g *globals, c *client) error {
	usd, n, err := ledger.FleetSpend(ctx, c.js, g.names)
	if err != nil {
		return fmt.Errorf("spend: %w", err)
	}
	_, err = fmt.Fprintf(g.stdout, "spend  $%.4f over %d workflows\n", usd, n)
	return err
}

// writeSpend prints the spend of a workflow's events, for audit --summary.
func writeSpend(g *globals, events []subjects.AuditEvent) error {
	rep, _ := ledger.NewReport(nil)
	for i := range events {
		rep.Add(&events[i])
	}
	_, err := fmt.Fprintln(g.stdout, spendLine(rep.Total))
	return err
}
