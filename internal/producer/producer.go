// Package producer submits task requests and follows them to their
// terminal audit events, the way any client of the wire contract would.
package producer

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

// Submitted is a request the server acknowledged.
type Submitted struct {
	Workflow, Task string
	Queue          string
	Seq            uint64
	// Duplicate: the server already held this request (same workflow and
	// task within the duplicate window) and stored it once.
	Duplicate bool
}

// AttemptTimeout bounds one publish attempt: a PubAck not back by then is
// taken as lost, and the request is sent again with the same Nats-Msg-Id,
// which the server's duplicate window stores once.
const AttemptTimeout = 2 * time.Second

// SubmitTimeout bounds Publish's retries when ctx has no deadline. It is
// well inside the default duplicate window (2 minutes), so a retry of a
// request stored after all is recognised as a duplicate.
const SubmitTimeout = 30 * time.Second

// retryBase and retryMax bound the pause between attempts.
const (
	retryBase = 100 * time.Millisecond
	retryMax  = time.Second
)

// ErrNoAck is returned when no attempt got a PubAck before the deadline:
// the request may or may not be stored. Publishing it again with the same
// Nats-Msg-Id within the duplicate window is safe.
var ErrNoAck = errors.New("no acknowledgement from the server: the request may or may not be stored; submit it again to find out (it is stored once)")

// Publish validates req and publishes it to the queue (see Msg). A lost
// PubAck (a timeout, no responders while a stream leader is elected, a
// connection being re-established) is retried with the same message, so
// the same Nats-Msg-Id, until ctx ends (SubmitTimeout when ctx has no
// deadline): the caller gets a PubAck, possibly Duplicate, or an error,
// never silence. Other errors (the server refused the request) are not
// retried.
func Publish(ctx context.Context, js jetstream.JetStream, names subjects.Names, queue string, req subjects.TaskRequest) (Submitted, error) {
	msg, err := Msg(names, queue, req)
	if err != nil {
		return Submitted{}, err
	}
	ack, err := PublishMsg(ctx, js, msg)
	if err != nil {
		return Submitted{}, fmt.Errorf("task %s/%s: publish: %w", req.Workflow, req.ID, err)
	}
	return Submitted{Workflow: req.Workflow, Task: req.ID, Queue: queue, Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
}

// PublishMsg publishes msg, which must carry a Nats-Msg-Id, retrying a lost
// PubAck as Publish does. The error after the last attempt wraps ErrNoAck
// and that attempt's error.
func PublishMsg(ctx context.Context, js jetstream.JetStream, msg *nats.Msg) (*jetstream.PubAck, error) {
	if msg.Header.Get(subjects.HeaderMsgID) == "" {
		return nil, errors.New("publish: a retried message needs a Nats-Msg-Id")
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, SubmitTimeout)
		defer cancel()
	}
	pause := retryBase
	for attempt := 1; ; attempt++ {
		actx, cancel := context.WithTimeout(ctx, AttemptTimeout)
		ack, err := js.PublishMsg(actx, msg)
		cancel()
		if err == nil {
			return ack, nil
		}
		if !ackLost(err) {
			return nil, err
		}
		timer := time.NewTimer(pause)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, fmt.Errorf("%w (%d attempts, the last: %w)", ErrNoAck, attempt, err)
		case <-timer.C:
		}
		pause = min(2*pause, retryMax)
	}
}

// ackLost reports whether err leaves it unknown whether the server stored
// the message, so that sending it again is the way to learn it.
func ackLost(err error) bool {
	for _, e := range []error{context.DeadlineExceeded, nats.ErrTimeout, nats.ErrNoResponders,
		jetstream.ErrNoStreamResponse, nats.ErrConnectionReconnecting, nats.ErrDisconnected, nats.ErrStaleConnection} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// Msg validates req and builds its message for the queue: the JSON body,
// Nats-Msg-Id "<wf token>/<task token>" and the contract version.
func Msg(names subjects.Names, queue string, req subjects.TaskRequest) (*nats.Msg, error) {
	if err := subjects.ValidateQueue(queue); err != nil {
		return nil, err
	}
	if err := req.Validate(); err != nil {
		return nil, fmt.Errorf("task %q: %w", req.ID, err)
	}
	body, err := json.Marshal(&req)
	if err != nil {
		return nil, fmt.Errorf("task %q: encode: %w", req.ID, err)
	}
	msg := &nats.Msg{Subject: names.TaskSubject(queue), Header: nats.Header{}, Data: body}
	msg.Header.Set(subjects.HeaderMsgID, subjects.TaskMsgID(req.Workflow, req.ID))
	msg.Header.Set(subjects.HeaderContract, subjects.ContractVersion)
	return msg, nil
}

// AuditLastSeq returns the audit stream's last sequence: following from
// the next one sees every event written after it.
func AuditLastSeq(ctx context.Context, js jetstream.JetStream, names subjects.Names) (uint64, error) {
	s, err := js.Stream(ctx, names.AuditStream())
	if err != nil {
		return 0, fmt.Errorf("audit stream %s: %w (is a worker running?)", names.AuditStream(), err)
	}
	return s.CachedInfo().State.LastSeq, nil
}

// terminalFilters are the audit subjects of workflow's terminal events,
// one per terminal event type, whoever the actor.
func terminalFilters(names subjects.Names, workflow string) []string {
	var out []string
	for _, et := range subjects.EventTypes {
		if et.Terminal() {
			out = append(out, names.AuditFilter(workflow, "", "", et))
		}
	}
	return out
}

// Terminal is a task's terminal event.
type Terminal struct {
	Event subjects.AuditEvent
	Seq   uint64
}

// FollowTerminal delivers the terminal events of workflow's tasks written
// after sequence afterSeq, until fn returns false or ctx ends. It reads only
// the workflow's terminal events (a subject filter per terminal type), so
// its cost follows the workflow's tasks, not the stream or the events each
// task writes.
func FollowTerminal(ctx context.Context, js jetstream.JetStream, names subjects.Names, workflow string, afterSeq uint64, fn func(Terminal) bool) error {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: terminalFilters(names, workflow),
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	}
	if afterSeq > 0 {
		cfg.DeliverPolicy = jetstream.DeliverByStartSequencePolicy
		cfg.OptStartSeq = afterSeq + 1
	}
	cons, err := streamread.OrderedConsumer(ctx, js, names.AuditStream(), cfg)
	if err != nil {
		return fmt.Errorf("follow %s: %w", workflow, err)
	}
	defer streamread.DeleteConsumer(ctx, streamread.StreamOf(js, names.AuditStream()), cons)
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("follow %s: %w", workflow, err)
	}
	defer it.Stop()
	for {
		m, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			return fmt.Errorf("follow %s: %w", workflow, err)
		}
		var ev subjects.AuditEvent
		if json.Unmarshal(m.Data(), &ev) != nil || !ev.EventType.Terminal() {
			continue
		}
		md, _ := m.Metadata()
		var seq uint64
		if md != nil {
			seq = md.Sequence.Stream
		}
		if !fn(Terminal{Event: ev, Seq: seq}) {
			return nil
		}
	}
}
