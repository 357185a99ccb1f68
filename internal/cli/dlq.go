package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/dlq"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

func newDlqCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "dlq",
		Short: "List, inspect and redrive dead letters: requests that were rejected or failed",
		Long: `The dead-letter stream keeps every rejected or failed request, byte for byte, with
headers that say why. These commands only read it and submit new requests: they never
delete an entry, and a redriven one stays as the record of what happened. The stream
drops entries older than serve's --dlq-max-age (default 30 days).`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newDlqLsCmd(g), newDlqShowCmd(g), newDlqRedriveCmd(g))
	return cmd
}

// dlqFilter registers the flags that select entries and checks them.
func dlqFilter(cmd *cobra.Command, f *dlq.Filter) func() error {
	cmd.Flags().StringVar(&f.Queue, "queue", "", "only this queue's entries")
	cmd.Flags().StringVar(&f.Reason, "reason", "", "only entries with this reason: "+dlq.ReasonNames())
	cmd.Flags().StringVar(&f.Workflow, "workflow", "", "only entries of this workflow ID")
	return func() error {
		if f.Queue != "" {
			if err := subjects.ValidateQueue(f.Queue); err != nil {
				return fmt.Errorf("--queue: %w", err)
			}
		}
		if f.Reason != "" {
			if err := dlq.ValidateReason(f.Reason); err != nil {
				return fmt.Errorf("--reason: %w", err)
			}
		}
		if f.Limit < 0 {
			return fmt.Errorf("--limit %d: want 0 (no limit) or more", f.Limit)
		}
		return nil
	}
}

func newDlqLsCmd(g *globals) *cobra.Command {
	f, asJSON := dlq.Filter{}, false
	cmd := &cobra.Command{
		Use:   "ls",
		Short: "List dead letters, oldest first",
		Example: `  drover dlq ls --reason max_attempts
  drover dlq ls --workflow board-T1 --limit 20 --json`,
		Args: cobra.NoArgs,
	}
	check := dlqFilter(cmd, &f)
	cmd.Flags().IntVar(&f.Limit, "limit", 0, "list at most this many entries (0: all)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object per entry")
	cmd.RunE = func(cmd *cobra.Command, _ []string) error {
		if err := check(); err != nil {
			return err
		}
		c, err := g.connect(cmd.Context(), "dlq ls")
		if err != nil {
			return err
		}
		defer c.Close()
		enc := json.NewEncoder(g.stdout)
		tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
		n := 0
		err = dlq.List(cmd.Context(), c.js, g.names, f, func(e dlq.Entry) error {
			if n++; asJSON {
				return enc.Encode(dlq.ViewOf(e, false))
			}
			if n == 1 {
				fmt.Fprintln(tw, "SEQ\tTIME\tQUEUE\tREASON\tWORKFLOW/TASK\tDELIVERIES\tERROR")
			}
			t := func(s string) string { return redact.Terminal(strings.Join(strings.Fields(s), " ")) } // one line per entry
			fmt.Fprintf(tw, "%d\t%s\t%s\t%s\t%s\t%d\t%s\n", e.Seq, e.Time.UTC().Format(time.DateTime), t(e.Queue), t(string(e.Reason)),
				t(e.Ref()), e.Deliveries, t(redact.ClipRunes(redact.OneLine(e.Error), 60)))
			return nil
		})
		if err != nil {
			return err
		}
		if n == 0 && !asJSON {
			fmt.Fprintln(g.stderr, "no dead letters match")
		}
		return tw.Flush()
	}
	return cmd
}

func newDlqShowCmd(g *globals) *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:     "show SEQ",
		Short:   "Show one dead letter: every header, and the request body",
		Example: "  drover dlq show 12\n  drover dlq show 12 --json",
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			seq, err := parseSeq(args[0])
			if err != nil {
				return err
			}
			c, err := g.connect(cmd.Context(), "dlq show")
			if err != nil {
				return err
			}
			defer c.Close()
			e, err := dlq.Get(cmd.Context(), c.js, g.names, seq)
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(g.stdout).Encode(dlq.ViewOf(e, true))
			}
			return writeEntry(g.stdout, e)
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the entry as one JSON object")
	return cmd
}

// writeEntry prints an entry readably: its place, every header sorted by
// name, and the body, pretty-printed if it is JSON and quoted otherwise.
// Control characters and bidi overrides are escaped (redact.Terminal).
func writeEntry(w io.Writer, e dlq.Entry) error {
	fmt.Fprintf(w, "seq %d, queue %s, stored %s, %d bytes\nheaders:\n", e.Seq, redact.Terminal(e.Queue),
		e.Time.UTC().Format(time.RFC3339Nano), len(e.Body))
	for _, k := range slices.Sorted(maps.Keys(e.Header)) {
		for _, v := range e.Header[k] {
			fmt.Fprintf(w, "  %s: %s\n", redact.Terminal(k), redact.Terminal(v))
		}
	}
	var buf bytes.Buffer
	if json.Indent(&buf, e.Body, "  ", "  ") != nil {
		buf.Reset()
		buf.WriteString(strconv.Quote(string(e.Body)))
	}
	_, err := fmt.Fprintf(w, "body:\n  %s\n", redact.Terminal(buf.String()))
	return err
}

func parseSeq(s string) (uint64, error) {
	seq, err := strconv.ParseUint(s, 10, 64)
	if err != nil || seq == 0 {
		return 0, fmt.Errorf("SEQ %q: want a DLQ stream sequence, a whole number from 1 (see drover dlq ls)", s)
	}
	return seq, nil
}

type redriveFlags struct {
	filter            dlq.Filter
	all, wait, dryRun bool
	seqs              []uint64
	opts              dlq.RedriveOptions
}

func newDlqRedriveCmd(g *globals) *cobra.Command {
	var f redriveFlags
	cmd := &cobra.Command{
		Use:   "redrive SEQ... | --all [--queue Q] [--reason R] [--workflow W]",
		Short: "Submit dead letters again under a new workflow; the cache makes finished roles free",
		Long: `Submit the requests of DLQ entries again, each with its task ID and every field kept,
under a new workflow: --to-workflow, or by default "<workflow>-redrive-<n>" with the
smallest n that has no state yet. Roles that already succeeded are served from the
cache, so only the work that failed runs again. Entries stay in the DLQ.

Requests rejected as invalid_json, missing_field, invalid_value or too_large would be
rejected again: naming one refuses the whole command; --all skips them with a note, and
of several entries for the same task it redrives the newest. --wait follows the tasks
like drover submit --wait.

Each redrive is recorded in the audit stream before its request is submitted: a
task_redriven event by actor "human" on the original task, whose metadata names --actor
(default "cli:$USER@<host>"), the DLQ entry, its reason and the new workflow.`,
		Example: `  drover dlq redrive 12 15 --wait
  drover dlq redrive --all --reason max_deliveries --workflow board-T1 --to-workflow board-T1-fixed
  drover dlq redrive --all --dry-run`,
		RunE: func(cmd *cobra.Command, args []string) error {
			return redrive(cmd.Context(), g, f)
		},
	}
	check := dlqFilter(cmd, &f.filter)
	fl := cmd.Flags()
	fl.BoolVar(&f.all, "all", false, "redrive every redrivable entry that --queue, --reason and --workflow select")
	fl.StringVar(&f.opts.Workflow, "to-workflow", "", `new workflow ID for every request (default "<workflow>-redrive-<n>")`)
	fl.StringVar(&f.opts.Queue, "to-queue", "", "queue to submit to (default: each entry's own queue)")
	fl.BoolVar(&f.dryRun, "dry-run", false, "print what would be submitted, and submit nothing")
	fl.BoolVar(&f.wait, "wait", false, "follow the tasks to their terminal events")
	fl.StringVar(&f.opts.Actor, "actor", "", `who redrives, recorded in each task_redriven audit event (default "cli:$USER@<host>")`)
	cmd.PreRunE = func(cmd *cobra.Command, args []string) error {
		if f.opts.Actor == "" {
			host, _ := os.Hostname()
			f.opts.Actor = cliActor(os.Getenv("USER"), host)
		}
		if err := dlq.ValidateActor(f.opts.Actor); err != nil {
			return fmt.Errorf("--actor: %w", err)
		}
		switch {
		case f.all && len(args) > 0:
			return errors.New("give SEQ arguments or --all, not both")
		case !f.all && len(args) == 0:
			return errors.New("give the SEQ of each entry to redrive (see drover dlq ls), or --all")
		case !f.all && (f.filter.Queue != "" || f.filter.Reason != "" || f.filter.Workflow != ""):
			return errors.New("--queue, --reason and --workflow select entries for --all; with SEQ arguments, drop them")
		case f.dryRun && f.wait:
			return errors.New("--dry-run submits nothing, so there is nothing to --wait for")
		}
		if f.opts.Workflow != "" {
			if err := subjects.ValidateID(f.opts.Workflow); err != nil {
				return fmt.Errorf("--to-workflow %q: %w", f.opts.Workflow, err)
			}
		}
		if f.opts.Queue != "" {
			if err := subjects.ValidateQueue(f.opts.Queue); err != nil {
				return fmt.Errorf("--to-queue: %w", err)
			}
		}
		for _, a := range args {
			seq, err := parseSeq(a)
			if err != nil {
				return err
			}
			f.seqs = append(f.seqs, seq)
		}
		return check()
	}
	return cmd
}

// cliActor is the default actor of a redrive from the command line,
// "cli:<user>@<host>", "unknown" standing for what is not known, bounded to
// what dlq.ValidateActor accepts.
func cliActor(user, host string) string {
	clean := func(s string) string {
		s = strings.Map(func(r rune) rune {
			if unicode.IsPrint(r) && r != '@' {
				return r
			}
			return -1
		}, strings.ToValidUTF8(s, ""))
		if s == "" {
			return "unknown"
		}
		return s
	}
	a := "cli:" + clean(user) + "@" + clean(host)
	if len(a) > dlq.MaxActorBytes {
		a = strings.ToValidUTF8(a[:dlq.MaxActorBytes], "")
	}
	return a
}

func redrive(ctx context.Context, g *globals, f redriveFlags) error {
	c, err := g.connect(ctx, "dlq redrive")
	if err != nil {
		return err
	}
	defer c.Close()
	var entries []dlq.Entry
	if f.all {
		entries, err = dlq.Select(ctx, c.js, g.names, f.filter, f.opts.Workflow, func(e dlq.Entry, why error) {
			fmt.Fprintf(g.stderr, "skipping dlq entry %d: %v\n", e.Seq, why)
		})
		if err != nil {
			return err
		}
		if len(entries) == 0 {
			fmt.Fprintln(g.stderr, "nothing to redrive")
			return nil
		}
	}
	for _, seq := range f.seqs {
		e, err := dlq.Get(ctx, c.js, g.names, seq)
		if err != nil {
			return err
		}
		entries = append(entries, e)
	}
	if f.dryRun {
		plan, err := dlq.Plan(ctx, c.js, g.names, entries, f.opts)
		for _, p := range plan {
			fmt.Fprintf(g.stdout, "would redrive dlq entry %d (%s) %s as %s/%s on queue %s\n", p.Entry.Seq, p.Entry.Reason,
				p.Entry.Ref(), p.Request.Workflow, p.Request.ID, p.Queue)
		}
		return err
	}
	after, err := producer.AuditLastSeq(ctx, c.js, g.names)
	if err != nil {
		return err
	}
	subs, err := dlq.Redrive(ctx, c.js, g.names, entries, f.opts)
	out := g.stdout
	if f.wait {
		out = g.stderr // stdout carries the JSON lines of the finished tasks
	}
	for i, s := range subs {
		fmt.Fprintf(out, "redrove dlq entry %d (%s) %s as %s/%s on %s #%d%s\n", entries[i].Seq, entries[i].Reason, entries[i].Ref(),
			s.Workflow, s.Task, g.names.TaskSubject(s.Queue), s.Seq, dupNote(s))
	}
	if err != nil || !f.wait {
		return err
	}
	return waitAll(ctx, g, c, subs, after)
}
