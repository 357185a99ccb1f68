package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

// Query selects audit events. Every field narrows the subject filter that the
// server applies, so a replay reads only what it returns: an empty field
// matches anything.
type Query struct {
	// Workflow and Task are IDs as they are (not tokens); they are escaped
	// here. Task subjects.Reserved selects a workflow's own events.
	Workflow, Task string
	// Actor and Type select one actor or one event type.
	Actor subjects.Actor
	Type  subjects.EventType

	// Since starts the replay at the first event the stream stored at or
	// after it; the server finds that point by time, it does not scan from
	// the start. Until ends the replay at the first event stored after it.
	// Both compare the time the stream stored the event (Record.Time), which
	// is what the server indexes; the event's own timestamp is the worker's
	// clock when it built the event, normally a little earlier. Zero means
	// unbounded.
	Since, Until time.Time

	// Follow keeps delivering new events after the existing ones, until ctx
	// ends or, when Until is set, until an event stored after Until arrives
	// or the local clock passes Until by followGrace.
	Follow bool
}

// followGrace is how long a following replay with an Until waits past Until
// for events stored before Until that are still on their way.
const followGrace = time.Second

// Filter returns the subject filter of q: the narrowest one for the question.
func (q Query) Filter(names subjects.Names) string {
	return names.AuditFilter(q.Workflow, q.Task, q.Actor, q.Type)
}

// Record is one audit event as stored in the stream.
type Record struct {
	// Seq is the event's sequence in the audit stream.
	Seq uint64
	// Subject is the event's subject (with tokens, not IDs).
	Subject string
	// Time is when the stream stored the event.
	Time time.Time
	// Event is the decoded body; its zero value when Err is set.
	Event subjects.AuditEvent
	// Headers are the message headers (Nats-Msg-Id, Drover-Contract, ce-*).
	Headers nats.Header
	// Data is the body as stored.
	Data []byte
	// Err is set when the body did not decode as an audit event. Such a
	// record is still delivered, so a replay never silently skips an event.
	Err error
}

// newRecord builds a Record and decodes its body.
func newRecord(seq uint64, subject string, at time.Time, h nats.Header, data []byte) Record {
	r := Record{Seq: seq, Subject: subject, Time: at, Headers: h, Data: data}
	if err := json.Unmarshal(data, &r.Event); err != nil {
		r.Event = subjects.AuditEvent{}
		r.Err = fmt.Errorf("audit: event %d on %s does not decode: %w", seq, subject, err)
	}
	return r
}

// Replay calls fn with each event that matches q, in stream order, through an
// ordered consumer whose subject filter is q.Filter(names), so the server
// skips everything else and the cost follows the size of the answer.
//
// Without Follow the replay ends after the last matching event that existed
// when it began (its sequence is read up front; a filter that matches nothing
// returns at once) or at the first event stored after Until. With Follow it
// keeps waiting for new events.
//
// A non-nil error from fn stops the replay, and Replay returns that error as
// it is. When ctx ends, a following replay returns nil (ending ctx is how a
// follower is stopped); any other replay returns ctx.Err(), since its answer
// is incomplete. The consumer is stopped and deleted before Replay returns.
func Replay(ctx context.Context, js jetstream.JetStream, names subjects.Names, q Query, fn func(Record) error) error {
	if !q.Since.IsZero() && !q.Until.IsZero() && q.Until.Before(q.Since) {
		return nil
	}
	if q.Follow && !q.Until.IsZero() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithDeadline(ctx, q.Until.Add(followGrace))
		defer cancel()
	}
	stop := func(err error) error {
		if ctx.Err() != nil {
			if q.Follow {
				return nil
			}
			return ctx.Err()
		}
		return fmt.Errorf("audit: replay %s: %w", q.Filter(names), err)
	}

	filter := q.Filter(names)
	var lastSeq uint64
	if !q.Follow {
		last, found, err := lastMatching(ctx, js, names, filter)
		if err != nil {
			return stop(err)
		}
		if !found || (!q.Since.IsZero() && last.Time.Before(q.Since)) {
			return nil
		}
		lastSeq = last.Sequence
	}

	cfg := jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}}
	if !q.Since.IsZero() {
		since := q.Since
		cfg.DeliverPolicy = jetstream.DeliverByStartTimePolicy
		cfg.OptStartTime = &since
	}
	cons, err := OrderedConsumer(ctx, js, names.AuditStream(), cfg)
	if err != nil {
		return stop(err)
	}
	defer DeleteConsumer(ctx, StreamOf(js, names.AuditStream()), cons)
	it, err := cons.Messages()
	if err != nil {
		return stop(err)
	}
	defer it.Stop()

	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			return stop(err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return stop(err)
		}
		if !q.Until.IsZero() && md.Timestamp.After(q.Until) {
			return nil
		}
		rec := newRecord(md.Sequence.Stream, msg.Subject(), md.Timestamp, msg.Headers(), msg.Data())
		if err := fn(rec); err != nil {
			return err
		}
		if !q.Follow && md.Sequence.Stream >= lastSeq {
			return nil
		}
	}
}

// lastMatching returns the last stored message that matches filter, which may
// hold wildcards; found is false when nothing matches.
func lastMatching(ctx context.Context, js jetstream.JetStream, names subjects.Names, filter string) (*jetstream.RawStreamMsg, bool, error) {
	stream, err := js.Stream(ctx, names.AuditStream())
	if err != nil {
		return nil, false, err
	}
	m, err := stream.GetLastMsgForSubject(ctx, filter)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	return m, true, nil
}

// ConsumerDeleter deletes consumers of one stream: a jetstream.Stream, or
// StreamOf a stream name.
type ConsumerDeleter interface {
	DeleteConsumer(ctx context.Context, consumer string) error
}

// StreamOf deletes consumers of the named stream through js, without
// looking the stream up first.
func StreamOf(js jetstream.JetStream, stream string) ConsumerDeleter { return streamOf{js, stream} }

type streamOf struct {
	js     jetstream.JetStream
	stream string
}

func (s streamOf) DeleteConsumer(ctx context.Context, consumer string) error {
	return s.js.DeleteConsumer(ctx, s.stream, consumer)
}

// DeleteConsumer deletes a reader's ephemeral consumer at once rather than
// leaving it to the server's inactivity threshold. It runs after ctx may
// have ended, so it uses its own short deadline; a failure is harmless,
// since the server removes an idle consumer by itself.
func DeleteConsumer(ctx context.Context, s ConsumerDeleter, cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = s.DeleteConsumer(dctx, info.Name)
}

// EventTable prints records as an aligned table. Rows are held until Flush
// to align the columns; a follower flushes after each record or batch, and
// the widths may then differ between batches.
type EventTable struct {
	tw  *tabwriter.Writer
	err error
}

// eventTimeLayout is RFC 3339 with milliseconds.
const eventTimeLayout = "2006-01-02T15:04:05.000Z07:00"

// WriteEventsTable starts an event table on w with its header row.
func WriteEventsTable(w io.Writer) *EventTable {
	t := &EventTable{tw: tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)}
	t.row("TIME", "WORKFLOW", "TASK", "ACTOR", "EVENT", "ATTEMPT", "STATUS", "CACHED", "DURATION", "ACTION", "ERROR / CHANGE")
	return t
}

// Add adds one row: the event's time (UTC), IDs, actor, type, attempt,
// status, whether it was cached, its duration, action and the first line of
// its error, or, for an implementer attempt in a workspace, its change
// (files, lines added and removed). An undecodable record shows its stream time, subject and error.
func (t *EventTable) Add(r Record) {
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
		last = EventChange(e) // an implementer attempt's recorded change, in a workspace
	}
	t.row(e.Timestamp.UTC().Format(eventTimeLayout), e.WorkflowID, e.TaskID, string(e.Actor), string(e.EventType),
		strconv.Itoa(e.Attempt), e.Status, cached, took, e.Action, last)
}

// Flush writes the rows added so far and returns the first write error.
func (t *EventTable) Flush() error {
	if err := t.tw.Flush(); err != nil && t.err == nil {
		t.err = err
	}
	return t.err
}

// row writes one line of cells; an empty cell shows as "-". Tabs and line
// breaks become spaces, and control characters and bidi overrides are
// escaped (redact.Terminal): events hold untrusted agent text.
func (t *EventTable) row(cells ...string) {
	var b strings.Builder
	for i, c := range cells {
		if i > 0 {
			b.WriteByte('\t')
		}
		c = redact.Terminal(strings.Map(func(r rune) rune {
			if r == '\t' || r == '\n' || r == '\r' {
				return ' '
			}
			return r
		}, c))
		b.WriteString(dash(c))
	}
	b.WriteByte('\n')
	if _, err := t.tw.Write([]byte(b.String())); err != nil && t.err == nil {
		t.err = err
	}
}

// shortError is the first line of msg, cut to 60 characters.
func shortError(msg string) string {
	msg, _, _ = strings.Cut(msg, "\n")
	if r := []rune(msg); len(r) > 60 {
		msg = string(r[:59]) + "…"
	}
	return msg
}

// OrderedConsumer creates an ordered consumer, retrying while JetStream is
// briefly unavailable (a leader election on a cluster answers 503 or not at
// all) until ctx ends. Each attempt has its own deadline, so a request lost
// with a server that died is asked again instead of waiting out ctx. A
// missing stream is final.
func OrderedConsumer(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	wait := 100 * time.Millisecond
	for {
		actx, cancel := context.WithTimeout(ctx, orderedCreateTimeout)
		cons, err := js.OrderedConsumer(actx, stream, cfg)
		cancel()
		if err == nil || errors.Is(err, jetstream.ErrStreamNotFound) {
			return cons, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		case <-t.C:
		}
		wait = min(2*wait, 2*time.Second)
	}
}

// orderedCreateTimeout bounds one attempt to create an ordered consumer:
// nats.go's default API timeout.
const orderedCreateTimeout = 5 * time.Second
