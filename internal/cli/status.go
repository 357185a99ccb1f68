package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/status"
	"github.com/droverhq/drover/internal/table"
)

func newStatusCmd(g *globals) *cobra.Command {
	var (
		asJSON          bool
		watch, discover time.Duration
	)
	cmd := &cobra.Command{
		Use:   "status",
		Short: "Show queues, workers, cache and audit size at a glance",
		Long: `Show, per queue, the requests pending, in flight (delivered, not yet settled, including
those waiting out a retry delay), redelivered and dead-lettered; every worker (found through
the NATS micro service "drover", as ` + "`nats micro ls`" + ` lists them) with its host, version,
concurrency, tasks in flight and uptime; the cache's entries and the workers' hit ratio; and
the audit stream's size.

--json prints the snapshot as JSON (with --watch, one JSON object per line).
--watch 2s redraws every 2 seconds until Ctrl-C.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			ctx := cmd.Context()
			c, err := g.connect(ctx, "status")
			if err != nil {
				return err
			}
			defer c.Close()
			col, err := status.NewCollector(status.Deps{NC: c.nc, JS: c.js, Names: g.names}, status.Config{Discover: discover})
			if err != nil {
				return err
			}
			if watch <= 0 {
				r, err := col.Collect(ctx)
				if err != nil {
					return err
				}
				if err := renderStatus(g.stdout, r, asJSON, true); err != nil || asJSON {
					return err
				}
				return writeFleetSpend(ctx, g, c)
			}
			return watchStatus(ctx, g.stdout, col, watch, asJSON)
		},
	}
	fl := cmd.Flags()
	fl.BoolVar(&asJSON, "json", false, "print the snapshot as JSON")
	fl.DurationVar(&watch, "watch", 0, "redraw every DURATION until Ctrl-C (0: print once)")
	fl.DurationVar(&discover, "discover-wait", status.DefaultDiscover, "how long to gather workers' replies to discovery")
	return cmd
}

// watchStatus redraws the status every interval until ctx ends: over the
// last one on a terminal, as successive blocks otherwise. A failed
// snapshot is shown and the next one tried.
func watchStatus(ctx context.Context, w io.Writer, col *status.Collector, every time.Duration, asJSON bool) error {
	clear := !asJSON && isTerminal(w)
	tick := time.NewTicker(every)
	defer tick.Stop()
	for first := true; ; first = false {
		r, err := col.Collect(ctx)
		if ctx.Err() != nil {
			return nil
		}
		switch {
		case clear:
			fmt.Fprint(w, "\033[H\033[2J")
		case !first && !asJSON:
			fmt.Fprintln(w)
		}
		if err != nil {
			fmt.Fprintf(w, "%s  status: %v\n", time.Now().UTC().Format(time.RFC3339), err)
		} else if err := renderStatus(w, r, asJSON, false); err != nil {
			return err
		}
		select {
		case <-ctx.Done():
			return nil
		case <-tick.C:
		}
	}
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// renderStatus prints one snapshot: as JSON (indented when alone, one
// line per snapshot when watching) or as tables.
func renderStatus(w io.Writer, r status.Report, asJSON, indent bool) error {
	if asJSON {
		enc := json.NewEncoder(w)
		if indent {
			enc.SetIndent("", "  ")
		}
		return enc.Encode(r)
	}
	fmt.Fprintf(w, "drover status  prefix %s  at %s\n\n", r.Prefix, r.At.Format(time.RFC3339))
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "QUEUE\tPENDING\tIN FLIGHT\tREDELIVERED\tDEAD-LETTERED")
	for _, q := range r.Queues {
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%d\n", q.Name, q.Pending, q.InFlight, q.Redelivered, q.DeadLettered)
	}
	if len(r.Queues) == 0 {
		fmt.Fprintln(tw, "(none)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w)
	tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	fmt.Fprintln(tw, "WORKER\tHOST\tVERSION\tCONCURRENCY\tIN FLIGHT\tUPTIME\tCOMPLETED\tFAILED\tSTATE")
	for _, wk := range r.Workers {
		state := wk.State
		if wk.Error != "" {
			state = "no status: " + wk.Error
		}
		up := time.Duration(wk.UptimeS * float64(time.Second)).Round(time.Second)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%d\t%s\t%d\t%d\t%s\n", wk.WorkerID, wk.Host, wk.Version,
			wk.Concurrency, wk.InFlight, up, wk.Tasks.Completed, wk.Tasks.Failed, state)
	}
	if len(r.Workers) == 0 {
		fmt.Fprintln(tw, "(none answered)")
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, wk := range r.Workers {
		for _, note := range wk.Warnings {
			fmt.Fprintf(w, "warning  %s: %s\n", redact.Terminal(redact.OneLine(wk.WorkerID)), redact.Terminal(redact.OneLine(note)))
		}
	}
	if err := renderWorkspaces(w, r.Workers); err != nil {
		return err
	}
	ratio := "-"
	if r.Cache.HitRatio != nil {
		ratio = fmt.Sprintf("%.1f%%", *r.Cache.HitRatio*100)
	}
	fmt.Fprintf(w, "\ncache  %d entries, hit ratio %s (%d hits, %d misses)\n", r.Cache.Entries, ratio, r.Cache.Hits, r.Cache.Misses)
	_, err := fmt.Fprintf(w, "audit  %d messages, %s\n", r.Audit.Messages, strings.TrimSpace(table.Bytes(r.Audit.Bytes)))
	return err
}

// renderWorkspaces prints the workspace counts of the workers that have
// workspaces; nothing when none has.
func renderWorkspaces(w io.Writer, workers []status.Worker) error {
	var tw *tabwriter.Writer
	for _, wk := range workers {
		ws := wk.Workspaces
		if ws == nil {
			continue
		}
		if tw == nil {
			fmt.Fprintln(w)
			tw = tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKSPACES\tWORKTREES\tOPEN\tKEPT\tDISK\tFETCHES\tPUSHES\tPUSHED BRANCHES\tPUSH RETRIES")
		}
		fmt.Fprintf(tw, "%s\t%d\t%d\t%d\t%s\t%d\t%d\t%d\t%d\n", wk.WorkerID, ws.Worktrees, ws.Open, ws.Kept,
			strings.TrimSpace(table.Bytes(uint64(max(ws.DiskBytes, 0)))), ws.Fetches, ws.Pushes, ws.PushedRefs, ws.PushRetries)
	}
	if tw == nil {
		return nil
	}
	return tw.Flush()
}
