// Package producer submits task requests and follows them to their
// terminal audit events, the way any client of the wire contract would.
package producer

import (
	"context"
	"encoding/json"
	"fmt"

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

// Publish validates req and publishes it to the queue (see Msg).
func Publish(ctx context.Context, js jetstream.JetStream, names subjects.Names, queue string, req subjects.TaskRequest) (Submitted, error) {
	msg, err := Msg(names, queue, req)
	if err != nil {
		return Submitted{}, err
	}
	ack, err := js.PublishMsg(ctx, msg)
	if err != nil {
		return Submitted{}, fmt.Errorf("task %s/%s: publish: %w", req.Workflow, req.ID, err)
	}
	return Submitted{Workflow: req.Workflow, Task: req.ID, Queue: queue, Seq: ack.Sequence, Duplicate: ack.Duplicate}, nil
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
	body, err := json.Marshal(req)
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

// Terminal is a task's terminal event.
type Terminal struct {
	Event subjects.AuditEvent
	Seq   uint64
}

// FollowTerminal delivers the terminal events of workflow's tasks written
// after sequence afterSeq, until fn returns false or ctx ends. It reads only
// the workflow's system events (a subject filter), so its cost follows the
// workflow, not the stream.
func FollowTerminal(ctx context.Context, js jetstream.JetStream, names subjects.Names, workflow string, afterSeq uint64, fn func(Terminal) bool) error {
	cfg := jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{names.AuditFilter(workflow, "", subjects.ActorSystem, "")},
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
