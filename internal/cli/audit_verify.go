package cli

import (
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/subjects"
)

// newAuditVerifyCmd is `drover audit verify`. It registers nothing itself:
// the audit command adds it with cmd.AddCommand(newAuditVerifyCmd(g)).
func newAuditVerifyCmd(g *globals) *cobra.Command {
	var (
		workflow string
		asJSON   bool
		dlq      bool
		cpFile   string
	)
	cmd := &cobra.Command{
		Use:   "verify",
		Short: "Check the audit stream's invariants and say what broke first",
		Long: `Read the audit stream once, in order, and check the promises of the wire
contract: no sequence is missing (the stream denies deletes), every event ID
is well formed, matches its subject and body, and appears once; each task's
events come in the pipeline's order (task_accepted, planner_decision, then per
round implementer_change before judge_verdict); a task ends at most once and
nothing of it follows its end; and every task_failed and task_rejected has
exactly one DLQ entry; the stream's settings still deny deletes and purges and
set no age or size limit (stream-config); and each event's Drover-Prev is the link (SHA-256) of
its task's previous event, so an event changed in place breaks the chain at
the next one. With --checkpoint, a stream behind a checkpoint taken earlier
(drover audit checkpoint) is reported as a regression. An event older than what the DLQ can still hold (its
max age, or its oldest entry once it discarded some) whose entry is gone is
counted as aged out, not checked, rather than reported.

Tasks without a terminal event yet are counted as open, not as violations.
--workflow checks one workflow only (sequence gaps are then not checked).
The exit status is 1 when an invariant is broken, with the earliest violation
first; --json prints the whole report as JSON.`,
		Example: `  drover audit verify
  drover audit verify --workflow board-T1
  drover audit verify --json --dlq=false`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if workflow != "" {
				if err := subjects.ValidateID(workflow); err != nil {
					return fmt.Errorf("--workflow %q: %w", workflow, err)
				}
			}
			opts := audit.VerifyOptions{Workflow: workflow, DLQ: dlq, StreamCheck: broker.CheckAudit}
			if cpFile != "" {
				cp, err := readCheckpoint(cpFile)
				if err != nil {
					return err
				}
				opts.Checkpoint = cp
			}
			c, err := g.connect(cmd.Context(), "audit verify")
			if err != nil {
				return err
			}
			defer c.Close()
			rep, err := audit.Verify(cmd.Context(), c.js, g.names, opts)
			if err != nil {
				return err
			}
			if asJSON {
				enc := json.NewEncoder(g.stdout)
				enc.SetIndent("", "  ")
				err = enc.Encode(rep)
			} else {
				err = writeVerifyReport(g.stdout, rep)
			}
			if err != nil {
				return err
			}
			if !rep.OK() {
				return exitCode(1)
			}
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&workflow, "workflow", "", "check only this workflow's events")
	fl.BoolVar(&asJSON, "json", false, "print the report as JSON")
	fl.BoolVar(&dlq, "dlq", true, "also check that every failed or rejected request has exactly one DLQ entry")
	fl.StringVar(&cpFile, "checkpoint", "", "also compare the stream with this checkpoint of drover audit checkpoint: a rolled-back tail is a regression")
	return cmd
}

// writeVerifyReport prints a report for people: one verdict line, the
// counts, and when something broke, the first violation and the list.
func writeVerifyReport(w io.Writer, rep audit.VerifyReport) error {
	verdict := "OK"
	if !rep.OK() {
		verdict = vfPlural(rep.ViolationCount, "violation")
	}
	scope := ""
	if rep.Workflow != "" {
		scope = " of workflow " + rep.Workflow
	}
	var b strings.Builder
	fmt.Fprintf(&b, "verified %s events of %s tasks%s in %s (%s events/s): %s\n",
		vfDigits(rep.Events), vfDigits(uint64(rep.Tasks)), scope, vfDuration(rep.Duration), vfRate(rep.EventsPerSec), verdict)
	fmt.Fprintf(&b, "tasks: %s completed, %s failed, %s cancelled, %s open; %s rejected requests; %s workflow events\n",
		vfDigits(uint64(rep.Completed)), vfDigits(uint64(rep.Failed)), vfDigits(uint64(rep.Cancelled)),
		vfDigits(uint64(rep.Open)), vfDigits(uint64(rep.Rejected)), vfDigits(rep.WorkflowEvents))
	if rep.Open > 0 {
		more := ""
		if n := rep.Open - len(rep.OpenTasks); n > 0 {
			more = fmt.Sprintf(" and %s more", vfDigits(uint64(n)))
		}
		fmt.Fprintf(&b, "open (no terminal event yet): %s%s\n", strings.Join(rep.OpenTasks, " "), more)
	}
	if !rep.SeqChecked {
		b.WriteString("sequence gaps: not checked (one workflow's events are not contiguous)\n")
	}
	if rep.CheckpointSeq > 0 {
		fmt.Fprintf(&b, "checkpoint: compared at sequence %s\n", vfDigits(rep.CheckpointSeq))
	}
	if rep.DLQChecked {
		fmt.Fprintf(&b, "DLQ: %s entries cross-checked\n", vfDigits(uint64(rep.DLQEntries)))
		if rep.DLQAgedOut > 0 {
			fmt.Fprintf(&b, "DLQ: %s failed or rejected requests older than the DLQ holds (before %s): aged out, not checked\n",
				vfDigits(uint64(rep.DLQAgedOut)), rep.DLQHorizon.UTC().Format(time.RFC3339))
		}
	} else {
		b.WriteString("DLQ: not checked\n")
	}
	if rep.First != nil {
		fmt.Fprintf(&b, "\nfirst violation: %s\n\n", rep.First)
		for _, v := range rep.Violations {
			fmt.Fprintf(&b, "  %s\n", v)
		}
		if n := rep.ViolationCount - len(rep.Violations); n > 0 {
			fmt.Fprintf(&b, "  ... and %s more\n", vfDigits(uint64(n)))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// vfDigits writes n with thousands separators: 1,000,000.
func vfDigits(n uint64) string {
	s := strconv.FormatUint(n, 10)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// vfRate writes a rate in few digits: 950, 243k, 1.2M.
func vfRate(r float64) string {
	switch {
	case r >= 1e6:
		return fmt.Sprintf("%.1fM", r/1e6)
	case r >= 1e3:
		return fmt.Sprintf("%.0fk", r/1e3)
	}
	return fmt.Sprintf("%.0f", r)
}

// vfDuration writes seconds with one decimal, or milliseconds below one
// second: 4.1s, 35ms.
func vfDuration(d time.Duration) string {
	if d < time.Second {
		return d.Round(time.Millisecond).String()
	}
	return fmt.Sprintf("%.1fs", d.Seconds())
}

// vfPlural writes "1 violation" or "3 violations".
func vfPlural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return vfDigits(uint64(n)) + " " + noun + "s"
}
