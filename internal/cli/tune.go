package cli

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/tune"
	"github.com/droverhq/drover/subjects"
)

func newTuneCmd(g *globals) *cobra.Command {
	var (
		since  string
		opts   tune.Options
		asJSON bool
	)
	cmd := &cobra.Command{
		Use:   "tune",
		Short: "Recommend role timeouts and max_attempts from the audit trail",
		Long: `Read role durations and failures from the audit stream, in one pass, and recommend
settings from them.

Per role and task type it shows the successful, uncached runs with their p50, p95 and
p99 durations, and the retries that timed out or failed otherwise; per task type the
rounds its completed tasks needed and the judge's rejections in each round. A task's
type is the "type" of its request (default "task").

A role's timeout is the --percentile of its durations (over every type) × --headroom,
rounded up to a readable unit (1m30s becomes 2m), never below 30s. A type's
max_attempts is the smallest number of rounds within which 95% of its completed tasks
finished, plus one, from 1 to 10; a type with fewer than 20 completed tasks is flagged
as low confidence. The output ends with a snippet in the configuration file's shape.`,
		Example: `  drover tune
  drover tune --since 168h --percentile 95 --headroom 2
  drover tune --workflow board-T1 --json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var err error
			if opts.Since, err = parseAuditTime("--since", since, time.Now()); err != nil {
				return err
			}
			if opts.Workflow != "" {
				if err := subjects.ValidateID(opts.Workflow); err != nil {
					return fmt.Errorf("--workflow %q: %w", opts.Workflow, err)
				}
			}
			if !(opts.Percentile > 0 && opts.Percentile <= 100) {
				return fmt.Errorf("--percentile %g: want more than 0 and at most 100", opts.Percentile)
			}
			if !(opts.Headroom >= 1) {
				return fmt.Errorf("--headroom %g: want 1 or more", opts.Headroom)
			}
			c, err := g.connect(cmd.Context(), "tune")
			if err != nil {
				return err
			}
			defer c.Close()
			rep, err := tune.Analyze(cmd.Context(), c.js, g.names, opts)
			if err != nil {
				return auditStreamErr(g, err)
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				return enc.Encode(rep)
			}
			if err := tune.WriteTable(g.stdout, rep); err != nil {
				return err
			}
			fmt.Fprintln(g.stdout)
			return tune.WriteSnippet(g.stdout, rep)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&since, "since", "", "only events stored since this RFC 3339 time, or this long ago (e.g. 168h)")
	fl.StringVar(&opts.Workflow, "workflow", "", "only events of this workflow ID")
	fl.Float64Var(&opts.Percentile, "percentile", tune.DefaultPercentile, "percentile of role durations a timeout covers")
	fl.Float64Var(&opts.Headroom, "headroom", tune.DefaultHeadroom, "factor applied to that percentile")
	fl.BoolVar(&asJSON, "json", false, "print the statistics and recommendations as JSON")
	return cmd
}
