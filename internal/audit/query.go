package audit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/streamread"
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
	cons, err := streamread.OrderedConsumer(ctx, js, names.AuditStream(), cfg)
	if err != nil {
		return stop(err)
	}
	defer streamread.DeleteConsumer(ctx, streamread.StreamOf(js, names.AuditStream()), cons)
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
