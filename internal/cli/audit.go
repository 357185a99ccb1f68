package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

// auditFlags are the flags of `drover audit`.
type auditFlags struct {
	workflow, task, actor, eventType string
	since, until                     string
	follow, json, summary            bool
}

// addFilters adds the flags that select events (drover audit, audit export).
func (f *auditFlags) addFilters(fl *pflag.FlagSet) {
	fl.StringVar(&f.workflow, "workflow", "", "only events of this workflow ID")
	fl.StringVar(&f.task, "task", "", `only events of this task ID ("_": workflow-level events)`)
	fl.StringVar(&f.actor, "actor", "", "only events written by this actor: system, planner, implementer, judge or human")
	fl.StringVar(&f.eventType, "type", "", "only events of this type, e.g. task_failed or judge_verdict")
	fl.StringVar(&f.since, "since", "", "start at this RFC 3339 time, or this long ago (e.g. 1h)")
	fl.StringVar(&f.until, "until", "", "stop after this RFC 3339 time, or this long ago (e.g. 10m)")
}

func newAuditCmd(g *globals) *cobra.Command {
	var f auditFlags
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Replay the audit trail of a workflow, a task, an actor or an event type",
		Long: `Replay audit events from the audit stream, oldest first.

Every filter narrows the subject filter the server applies, so a replay reads
only the events it prints, never the whole stream. --since and --until take an
RFC 3339 time (2026-11-30T12:00:00Z) or a duration meaning that long ago (90m,
1h, 36h) and compare the time the stream stored each event.

The default output is a table; --json prints each event as one line of JSON,
as stored (JSONL); --summary prints one row per task of a workflow (outcome,
attempts, duration, cached roles) and the workflow's wall-clock time, the sum
of its task durations and the parallel speedup. --follow keeps printing new
events until interrupted.`,
		Example: `  drover audit --workflow board-T1
  drover audit --workflow board-T1 --summary
  drover audit --task T1.1 --json
  drover audit --type task_failed --since 24h
  drover audit --actor judge --follow`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			q, err := f.query(time.Now())
			if err != nil {
				return err
			}
			return runAudit(cmd.Context(), g, f, q)
		},
	}
	fl := cmd.Flags()
	f.addFilters(fl)
	fl.BoolVarP(&f.follow, "follow", "f", false, "keep printing new events until interrupted (Ctrl-C)")
	fl.BoolVar(&f.json, "json", false, "print each event as one line of JSON (JSONL)")
	fl.BoolVar(&f.summary, "summary", false, "print a per-task summary of the workflow (needs --workflow)")
	cmd.AddCommand(newAuditVerifyCmd(g), newAuditExportCmd(g))
	cmd.AddCommand(newAuditCheckpointCmd(g))
	return cmd
}

// query validates the flags and builds the replay query; now resolves
// durations.
func (f auditFlags) query(now time.Time) (audit.Query, error) {
	q := audit.Query{Workflow: f.workflow, Task: f.task, Follow: f.follow}
	if f.workflow != "" {
		if err := subjects.ValidateID(f.workflow); err != nil {
			return q, fmt.Errorf("--workflow %q: %w", f.workflow, err)
		}
	}
	if f.task != "" && f.task != subjects.Reserved {
		if err := subjects.ValidateID(f.task); err != nil {
			return q, fmt.Errorf("--task %q: %w", f.task, err)
		}
	}
	if f.actor != "" {
		q.Actor = subjects.Actor(f.actor)
		if q.Actor != subjects.ActorSystem && q.Actor != subjects.ActorHuman && !subjects.Role(f.actor).Valid() {
			return q, fmt.Errorf("--actor %q: want system, planner, implementer, judge or human", f.actor)
		}
	}
	if f.eventType != "" {
		q.Type = subjects.EventType(f.eventType)
		if !q.Type.Valid() {
			return q, fmt.Errorf("--type %q: want one of %s", f.eventType, eventTypeList())
		}
	}
	var err error
	if q.Since, err = parseAuditTime("--since", f.since, now); err != nil {
		return q, err
	}
	if q.Until, err = parseAuditTime("--until", f.until, now); err != nil {
		return q, err
	}
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Until.Before(q.Since) {
		return q, fmt.Errorf("--until %s is before --since %s", q.Until.Format(time.RFC3339), q.Since.Format(time.RFC3339))
	}
	switch {
	case f.summary && f.workflow == "":
		return q, errors.New("--summary needs --workflow: it sums up the tasks of one workflow")
	case f.summary && (f.json || f.follow):
		return q, errors.New("--summary prints one table at the end; it cannot be combined with --json or --follow")
	}
	return q, nil
}

// parseAuditTime reads an RFC 3339 time, or a duration meaning that long
// before now. An empty value is the zero time (unbounded).
func parseAuditTime(flag, v string, now time.Time) (time.Time, error) {
	if v == "" {
		return time.Time{}, nil
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		return t, nil
	}
	d, err := time.ParseDuration(v)
	if err != nil || d < 0 {
		return time.Time{}, fmt.Errorf("%s %q: want an RFC 3339 time (2026-11-30T12:00:00Z) or a duration ago (90m, 1h)", flag, v)
	}
	return now.Add(-d), nil
}

// eventTypeList names the event types for an error message.
func eventTypeList() string {
	names := make([]string, len(subjects.EventTypes))
	for i, t := range subjects.EventTypes {
		names[i] = string(t)
	}
	return strings.Join(names, ", ")
}

// runAudit replays q and prints it in the form the flags ask for.
func runAudit(ctx context.Context, g *globals, f auditFlags, q audit.Query) error {
	c, err := g.connect(ctx, "audit")
	if err != nil {
		return err
	}
	defer c.Close()

	var (
		n      int
		events []subjects.AuditEvent
		table  *eventTable
	)
	var backlog uint64
	if !f.json && !f.summary {
		table = newEventTable(g.stdout)
		if f.follow {
			if backlog, err = lastAuditSeq(ctx, c, g, q); err != nil {
				return err
			}
		}
	}
	err = audit.Replay(ctx, c.js, g.names, q, func(r audit.Record) error {
		n++
		switch {
		case f.summary:
			if r.Err != nil {
				fmt.Fprintf(g.stderr, "drover: skipping %s\n", redact.Terminal(r.Err.Error()))
				return nil
			}
			events = append(events, r.Event)
		case f.json:
			if len(r.Data) > 0 && !json.Valid(r.Data) {
				fmt.Fprintf(g.stderr, "drover: skipping event %d on %s: not JSON\n", r.Seq, redact.Terminal(r.Subject))
				return nil
			}
			return audit.WriteJSONLine(g.stdout, r)
		default:
			table.Add(r)
			// A follower prints the events stored before it started as one
			// aligned table, then each new event as it arrives.
			if f.follow && r.Seq >= backlog {
				return table.Flush()
			}
		}
		return nil
	})
	if err != nil {
		return auditStreamErr(g, err)
	}
	switch {
	case n == 0 && !f.follow:
		fmt.Fprintf(g.stderr, "no audit events match %s\n", q.Filter(g.names))
		return nil
	case f.summary:
		if err := audit.Summarize(events).WriteTable(g.stdout); err != nil {
			return err
		}
		return writeSpend(g, events)
	case table != nil:
		return table.Flush()
	}
	return nil
}

// lastAuditSeq returns the sequence of the last event that matches q, 0 when
// there is none.
func lastAuditSeq(ctx context.Context, c *client, g *globals, q audit.Query) (uint64, error) {
	s, err := c.js.Stream(ctx, g.names.AuditStream())
	if err != nil {
		return 0, auditStreamErr(g, err)
	}
	m, err := s.GetLastMsgForSubject(ctx, q.Filter(g.names))
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("audit stream %s: %w", g.names.AuditStream(), err)
	}
	return m.Sequence, nil
}

// auditStreamErr explains a missing audit stream.
func auditStreamErr(g *globals, err error) error {
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("audit stream %s does not exist (has a worker started with --prefix %s?)", g.names.AuditStream(), g.names.Prefix())
	}
	return err
}
