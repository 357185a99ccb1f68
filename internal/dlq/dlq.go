// Package dlq reads and redrives the dead-letter stream: the record of every
// request that was rejected or failed (see the contract's "The dead-letter
// stream"). It only reads the stream and publishes new task requests; it
// never deletes or changes an entry, because the DLQ is a record.
package dlq

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/streamread"
	"github.com/droverhq/drover/subjects"
)

// ErrNotFound is wrapped by Get for a sequence that holds no entry.
var ErrNotFound = errors.New("no such dlq entry")

// Entry is one DLQ entry: the original request body byte for byte and what
// its headers say about why it is here.
type Entry struct {
	// Seq is the entry's sequence in the DLQ stream: what Get and the CLI
	// take to name it.
	Seq uint64
	// Time is when the entry was stored, in UTC.
	Time time.Time
	// Queue is the queue the request was submitted to (from the subject).
	Queue string
	// Reason and Error are the Drover-Reason and Drover-Error headers.
	Reason, Error string
	// Workflow and Task are the IDs of the Drover-Workflow and Drover-Task
	// token headers, decoded; "" when the request's ID was unreadable ("_").
	// A header that is not a valid token is kept as it is.
	Workflow, Task string
	// StreamSeq is the request's sequence in the tasks stream.
	StreamSeq uint64
	// Deliveries is how many times the request was delivered.
	Deliveries int
	// Body is the original request body.
	Body []byte
	// Header holds every header of the entry.
	Header nats.Header
}

// Ref names the entry's task as "<workflow>/<task>", "_" standing for an
// ID that could not be read.
func (e Entry) Ref() string { return orReserved(e.Workflow) + "/" + orReserved(e.Task) }

// Filter selects entries. Empty fields match anything.
type Filter struct {
	// Queue reads only this queue's subject (a server-side filter).
	Queue string
	// Reason keeps entries with this Drover-Reason; it must be one of
	// subjects.Reasons.
	Reason string
	// Workflow keeps entries of this workflow ID (not its token).
	Workflow string
	// Limit stops the listing after this many matching entries; 0 means no
	// limit.
	Limit int
}

// validate checks the filter; errors name the field and the value.
func (f Filter) validate() error {
	if f.Queue != "" {
		if err := subjects.ValidateQueue(f.Queue); err != nil {
			return fmt.Errorf("queue: %w", err)
		}
	}
	if f.Reason != "" {
		if err := ValidateReason(f.Reason); err != nil {
			return err
		}
	}
	if f.Limit < 0 {
		return fmt.Errorf("limit %d is negative (0 means no limit)", f.Limit)
	}
	return nil
}

// ValidateReason checks that r is one of the contract's DLQ reasons.
func ValidateReason(r string) error {
	if slices.Contains(subjects.Reasons, subjects.Reason(r)) {
		return nil
	}
	return fmt.Errorf("reason %q is not a DLQ reason; want one of %s", r, ReasonNames())
}

// ReasonNames lists the contract's DLQ reasons, comma-separated.
func ReasonNames() string {
	all := make([]string, len(subjects.Reasons))
	for i, x := range subjects.Reasons {
		all[i] = string(x)
	}
	return strings.Join(all, ", ")
}

func (f Filter) match(e Entry) bool {
	return (f.Reason == "" || e.Reason == f.Reason) && (f.Workflow == "" || e.Workflow == f.Workflow)
}

// List calls fn for each entry that matches f, oldest first. It reads the
// DLQ stream with an ordered consumer filtered by the queue's subject (every
// queue's when f.Queue is empty) and filters by reason and workflow on the
// client, since neither is part of the subject. It stops at the last entry
// stored when it began, so it never waits for new ones. An error from fn
// stops the listing and is returned as it is.
func List(ctx context.Context, js jetstream.JetStream, names subjects.Names, f Filter, fn func(Entry) error) error {
	if err := f.validate(); err != nil {
		return fmt.Errorf("dlq: filter: %w", err)
	}
	filter := names.DLQWildcard()
	if f.Queue != "" {
		filter = names.DLQSubject(f.Queue)
	}
	stream, err := dlqStream(ctx, js, names)
	if err != nil {
		return err
	}
	last, err := stream.GetLastMsgForSubject(ctx, filter)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("dlq: last entry of %s: %w", filter, err)
	}
	cons, err := streamread.OrderedConsumer(ctx, js, names.DLQStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{filter}})
	if err != nil {
		return fmt.Errorf("dlq: read %s: %w", filter, err)
	}
	defer streamread.DeleteConsumer(ctx, stream, cons)
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("dlq: read %s: %w", filter, err)
	}
	defer it.Stop()
	matched := 0
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("dlq: read %s: %w", filter, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("dlq: read %s: %w", filter, err)
		}
		seq := md.Sequence.Stream
		if seq > last.Sequence {
			return nil
		}
		e := newEntry(names, seq, msg.Subject(), md.Timestamp, msg.Headers(), msg.Data())
		if f.match(e) {
			if err := fn(e); err != nil {
				return err
			}
			matched++
		}
		if seq == last.Sequence || md.NumPending == 0 || (f.Limit > 0 && matched >= f.Limit) {
			return nil
		}
	}
}

// Get returns the entry stored at sequence seq of the DLQ stream; the
// error wraps ErrNotFound when there is none.
func Get(ctx context.Context, js jetstream.JetStream, names subjects.Names, seq uint64) (Entry, error) {
	stream, err := dlqStream(ctx, js, names)
	if err != nil {
		return Entry{}, err
	}
	m, err := stream.GetMsg(ctx, seq)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return Entry{}, fmt.Errorf("%w: %d in %s", ErrNotFound, seq, names.DLQStream())
	}
	if err != nil {
		return Entry{}, fmt.Errorf("dlq: entry %d: %w", seq, err)
	}
	return newEntry(names, m.Sequence, m.Subject, m.Time, m.Header, m.Data), nil
}

func dlqStream(ctx context.Context, js jetstream.JetStream, names subjects.Names) (jetstream.Stream, error) {
	s, err := js.Stream(ctx, names.DLQStream())
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("dlq: stream %s does not exist (has a worker started with prefix %q?)", names.DLQStream(), names.Prefix())
	}
	if err != nil {
		return nil, fmt.Errorf("dlq: stream %s: %w", names.DLQStream(), err)
	}
	return s, nil
}

// newEntry reads an entry from a stored message. Headers that do not parse
// leave their field zero; the raw values stay in Header.
func newEntry(names subjects.Names, seq uint64, subject string, at time.Time, h nats.Header, data []byte) Entry {
	e := Entry{
		Seq:      seq,
		Time:     at.UTC(),
		Queue:    strings.TrimPrefix(subject, names.DLQSubject("")),
		Reason:   h.Get(subjects.HeaderReason),
		Error:    h.Get(subjects.HeaderError),
		Workflow: idOf(h.Get(subjects.HeaderWorkflow)),
		Task:     idOf(h.Get(subjects.HeaderTask)),
		Body:     data,
		Header:   h,
	}
	e.StreamSeq, _ = strconv.ParseUint(h.Get(subjects.HeaderStreamSeq), 10, 64)
	e.Deliveries, _ = strconv.Atoi(h.Get(subjects.HeaderDeliveries))
	return e
}

// idOf decodes an ID token header; "_" (unreadable) becomes "".
func idOf(tok string) string {
	if tok == "" || tok == subjects.Reserved {
		return ""
	}
	id, err := subjects.ParseToken(tok)
	if err != nil {
		return tok
	}
	return id
}
