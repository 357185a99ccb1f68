// Package audit writes and reads the append-only audit stream. Writing is
// fenced: every event of a task is published with
// Nats-Expected-Last-Subject-Sequence over the task's audit subjects, so two
// workers can never both extend a task's record, and Nats-Msg-Id is the
// event ID, so a repeated publish inside the duplicate window is stored once.
package audit

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// ErrWrongLastSequence is returned when a task's audit subjects moved on
// since the expected sequence: another event was written for the task.
var ErrWrongLastSequence = errors.New("audit: wrong last sequence for the task")

// Publisher writes audit events.
type Publisher struct {
	js     jetstream.JetStream
	names  subjects.Names
	source string
	heads  heads
}

// NewPublisher returns a Publisher for the deployment of names.
func NewPublisher(js jetstream.JetStream, names subjects.Names) *Publisher {
	return &Publisher{js: js, names: names, source: "drover/" + names.Prefix()}
}

// Ack is the outcome of a publish.
type Ack struct {
	Seq       uint64
	Duplicate bool
}

// Publish writes ev. With fence set, the publish succeeds only if the last
// event on the task's audit subjects has sequence expectSeq (0: none);
// otherwise it returns ErrWrongLastSequence. Without it, ev goes after
// whatever the task's last event is (read, then fenced on, a few times). A
// duplicate event ID inside the duplicate window is acknowledged with
// Duplicate set and not stored again. Either way the event carries, in
// Drover-Prev, the link of the event it follows (the hash chain).
func (p *Publisher) Publish(ctx context.Context, ev *subjects.OutboxEvent, traceparent string, fence bool, expectSeq uint64) (Ack, error) {
	key := p.names.AuditTaskFilter(ev.Workflow, ev.Task)
	if fence {
		prev, err := p.prevOf(ctx, key, expectSeq)
		if err != nil {
			return Ack{}, err
		}
		return p.publish(ctx, ev, traceparent, key, expectSeq, prev)
	}
	for range 8 {
		seq, prev, err := p.lastOf(ctx, key)
		if err != nil {
			return Ack{}, err
		}
		ack, err := p.publish(ctx, ev, traceparent, key, seq, prev)
		if !errors.Is(err, ErrWrongLastSequence) {
			return ack, err
		}
	}
	return Ack{}, fmt.Errorf("audit: publish %s: the task's events kept moving", ev.ID)
}

// publish writes ev after the event at expectSeq, whose link is prev.
func (p *Publisher) publish(ctx context.Context, ev *subjects.OutboxEvent, traceparent, key string, expectSeq uint64, prev string) (Ack, error) {
	msg := p.Msg(ev, traceparent)
	fence := [...]string{prev, strconv.FormatUint(expectSeq, 10), key}
	msg.Header[subjects.HeaderPrev] = fence[0:1:1]
	msg.Header[jetstream.ExpectedLastSubjSeqHeader] = fence[1:2:2]
	msg.Header[jetstream.ExpectedLastSubjSeqSubjHeader] = fence[2:3:3]
	pa, err := p.js.PublishMsg(ctx, msg)
	// A synchronous publish has written the headers out by the time it
	// returns, answered or not: the map can hold the next event's.
	releaseHeader(msg.Header)
	if err != nil {
		if wrongLastSequence(err) {
			return Ack{}, fmt.Errorf("%w: %s (%v)", ErrWrongLastSequence, ev.ID, err)
		}
		return Ack{}, fmt.Errorf("audit: publish %s: %w", ev.ID, err)
	}
	if !pa.Duplicate {
		p.heads.put(key, pa.Sequence, LinkHex(msg.Subject, prev, msg.Data))
	}
	return Ack{Seq: pa.Sequence, Duplicate: pa.Duplicate}, nil
}

// wrongLastSequence reports whether err is the stream's refusal of a
// publish whose expected last subject sequence was not the subject's: code
// 10071, or 10164 from a replicated stream. The jetstream package makes
// this test for its KV writes but does not export it.
func wrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && (apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant)
}

// eventHeaders bounds the headers of a published event's map: the ten of
// Msg (the trace context among them), Drover-Prev and the two of the
// fence make thirteen, with one to spare.
const eventHeaders = 14

// headerPool holds the header maps of published events. An event's message
// is built, published and dropped in one call, once per event of every
// commit, and making its map was most of what building it cost.
var headerPool = sync.Pool{New: func() any { return make(nats.Header, eventHeaders) }}

// releaseHeader empties h and keeps it for the next event; a map grown
// past an event's headers (not Drover's) is left to the collector.
func releaseHeader(h nats.Header) {
	if len(h) > eventHeaders {
		return
	}
	clear(h)
	headerPool.Put(h)
}

// PublishEvent encodes ev and publishes it; see Publish.
func (p *Publisher) PublishEvent(ctx context.Context, ev *subjects.AuditEvent, traceparent string, fence bool, expectSeq uint64) (Ack, error) {
	oe, err := subjects.EncodeEvent(ev)
	if err != nil {
		return Ack{}, fmt.Errorf("audit: encode %s: %w", ev.EventID, err)
	}
	return p.Publish(ctx, oe, traceparent, fence, expectSeq)
}

// Msg builds the NATS message of an event: its subject, the event ID as
// Nats-Msg-Id, the contract version, CloudEvents attributes in binary content
// mode, and the trace context when there is one.
func (p *Publisher) Msg(ev *subjects.OutboxEvent, traceparent string) *nats.Msg {
	// One backing array for the header's values, in a map from
	// headerPool: an event is published once per commit, and its ten
	// one-value headers were most of what building it allocated.
	vals := [...]string{
		ev.ID,
		subjects.ContractVersion,
		"1.0",
		ev.ID,
		p.source,
		"dev.drover." + string(ev.Type),
		ev.Time.UTC().Format(time.RFC3339Nano),
		subjects.IDToken(ev.Workflow) + "/" + subjects.IDToken(ev.Task),
		"application/json",
		traceparent,
	}
	keys := [...]string{
		subjects.HeaderMsgID,
		subjects.HeaderContract,
		subjects.HeaderCESpecVersion,
		subjects.HeaderCEID,
		subjects.HeaderCESource,
		subjects.HeaderCEType,
		subjects.HeaderCETime,
		subjects.HeaderCESubject,
		subjects.HeaderCEContentType,
		subjects.HeaderTraceparent,
	}
	n := len(keys)
	if traceparent == "" {
		n--
	}
	backing := vals[:n:n]
	h := headerPool.Get().(nats.Header)
	for i := range n {
		h[keys[i]] = backing[i : i+1 : i+1]
	}
	subject := p.names.AuditSubject(ev.Workflow, ev.Task, ev.Actor, ev.Type)
	return &nats.Msg{Subject: subject, Header: h, Data: ev.Body}
}

// LastSeq returns the sequence of the task's last audit event, 0 if it has
// none, and that event's ID.
func (p *Publisher) LastSeq(ctx context.Context, stream jetstream.Stream, workflow, task string) (uint64, string, error) {
	m, err := stream.GetLastMsgForSubject(ctx, p.names.AuditTaskFilter(workflow, task))
	if err != nil {
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return 0, "", nil
		}
		return 0, "", fmt.Errorf("audit: last event of %s/%s: %w", workflow, task, err)
	}
	return m.Sequence, m.Header.Get(subjects.HeaderMsgID), nil
}
