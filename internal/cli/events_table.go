package cli

import (
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/table"
)

// eventTable prints audit records as an aligned table. Rows are held until
// Flush to align the columns; a follower flushes after each record or
// batch, and the widths may then differ between batches.
type eventTable struct {
	tw  *tabwriter.Writer
	err error
}

// eventTimeLayout is RFC 3339 with milliseconds.
const eventTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// newEventTable starts an event table on w with its header row.
func newEventTable(w io.Writer) *eventTable {
	t := &eventTable{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row("TIME", "WORKFLOW", "TASK", "ACTOR", "EVENT", "ATTEMPT", "STATUS", "CACHED", "DURATION", "ACTION", "ERROR / CHANGE")
	return t
}

// Add adds one row: the event's time (UTC), IDs, actor, type, attempt,
// status, whether it was cached, its duration, action and the first line of
// its error or, for an implementer attempt in a workspace, its change (files,
// lines added and removed). An undecodable record shows its stream time, subject and error.
func (t *eventTable) Add(r audit.Record) {
	if r.Err != nil {
		t.row(r.Time.UTC().Format(eventTimeLayout), r.Subject, "-", "-", "-", "-", "-", "-", "-", "-", shortError(r.Err.Error()))
		return
	}
	e := r.Event
	cached, took := "-", "-"
	if e.Cached {
		cached = "yes"
	}
	if e.DurationMS > 0 {
		took = (time.Duration(e.DurationMS) * time.Millisecond).String()
	}
	last := shortError(e.Error)
	if e.Error == "" {
		last = audit.EventChange(e) // an implementer attempt's recorded change, in a workspace
	}
	t.row(e.Timestamp.UTC().Format(eventTimeLayout), e.WorkflowID, e.TaskID, string(e.Actor), string(e.EventType),
		strconv.Itoa(e.Attempt), e.Status, cached, took, e.Action, last)
}

// Flush writes the rows added so far and returns the first write error.
func (t *eventTable) Flush() error {
	if err := t.tw.Flush(); err != nil && t.err == nil {
		t.err = err
	}
	return t.err
}

// row writes one line of cells, each made safe by table.Cell: events hold
// untrusted agent text.
func (t *eventTable) row(cells ...string) {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteByte('\t')
		}
		b.WriteString(table.Cell(c))
	}
	b.WriteByte('\n')
	if _, err := t.tw.Write([]byte(b.String())); err != nil && t.err == nil {
		t.err = err
	}
}

// shortError is the first line of msg, cut to 60 characters.
func shortError(msg string) string {
	return redact.ClipRunes(redact.FirstLine(msg), 60)
}
