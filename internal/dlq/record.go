package dlq

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/subjects"
)

// ErrBadActor is wrapped by the refusal of a redrive whose actor is
// missing or not a short line of printable text.
var ErrBadActor = errors.New("dlq: redrive: bad actor")

// MaxActorBytes bounds RedriveOptions.Actor.
const MaxActorBytes = 200

// ActionRedriven is the action of a task_redriven event.
const ActionRedriven = "redriven"

// ValidateActor checks a redrive's actor: 1 to MaxActorBytes bytes of
// printable UTF-8, such as "console:alice" or "cli:alice@host".
func ValidateActor(actor string) error {
	switch {
	case actor == "":
		return fmt.Errorf("%w: empty; name who redrives, e.g. cli:<user>", ErrBadActor)
	case len(actor) > MaxActorBytes:
		return fmt.Errorf("%w: %d bytes, more than %d", ErrBadActor, len(actor), MaxActorBytes)
	case !utf8.ValidString(actor):
		return fmt.Errorf("%w: not UTF-8", ErrBadActor)
	}
	for _, r := range actor {
		if !unicode.IsPrint(r) {
			return fmt.Errorf("%w: %q holds a character that is not printable", ErrBadActor, actor)
		}
	}
	return nil
}

// RedrivenEvent is the task_redriven event that records p's redrive by
// actor at now: on the original request's workflow and task ("_" for an
// ID the entry could not name), attempt 0, with the entry's DLQ sequence as
// its /<n>, so one entry's redrive is stored once however often it is
// retried.
func RedrivenEvent(p Planned, actor string, now time.Time) *subjects.AuditEvent {
	wf, task := orReserved(p.Entry.Workflow), orReserved(p.Entry.Task)
	et, by := subjects.EventTaskRedriven, subjects.ActorHuman
	ev := &subjects.AuditEvent{
		EventID: subjects.EventID(wf, task, 0, by, et, p.Entry.Seq), EventType: et,
		WorkflowID: wf, TaskID: task, Actor: by, Timestamp: now.UTC(),
		Action: ActionRedriven, Status: subjects.StatusSuccess,
		Metadata: mustJSON(map[string]any{"actor": actor, "dlq_seq": p.Entry.Seq,
			"new_workflow": p.Request.Workflow, "reason": p.Entry.Reason}),
	}
	ev.Normalize()
	return ev
}

// mustJSON encodes v, which cannot fail to encode.
func mustJSON(v any) json.RawMessage {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

func orReserved(id string) string {
	if id == "" {
		return subjects.Reserved
	}
	return id
}

// recorder writes a redrive's task_redriven events: the audit stream is
// looked up once, and one publisher keeps the chain's heads across them.
type recorder struct {
	names  subjects.Names
	stream jetstream.Stream
	pub    *audit.Publisher
}

func newRecorder(ctx context.Context, js jetstream.JetStream, names subjects.Names) (*recorder, error) {
	stream, err := js.Stream(ctx, names.AuditStream())
	if err != nil {
		return nil, fmt.Errorf("dlq: redrive: audit stream %s: %w", names.AuditStream(), err)
	}
	return &recorder{names: names, stream: stream, pub: audit.NewPublisher(js, names)}, nil
}

// record writes ev unless the last task_redriven of its task is ev
// already (a redrive of the same entry retried after the audit stream's
// duplicate window; inside it, Nats-Msg-Id makes the publish idempotent).
// It is not fenced: the original request has ended, and a running task
// of the same ID (a duplicate_id entry's) resyncs past a foreign event.
func (r *recorder) record(ctx context.Context, ev *subjects.AuditEvent) error {
	last, err := r.stream.GetLastMsgForSubject(ctx, r.names.AuditSubject(ev.WorkflowID, ev.TaskID, ev.Actor, ev.EventType))
	switch {
	case err == nil && last.Header.Get(subjects.HeaderMsgID) == ev.EventID:
		return nil
	case err != nil && !errors.Is(err, jetstream.ErrMsgNotFound):
		return fmt.Errorf("dlq: redrive: look up %s: %w", ev.EventID, err)
	}
	if _, err := r.pub.PublishEvent(ctx, ev, "", false, 0); err != nil {
		return fmt.Errorf("dlq: redrive: record: %w", err)
	}
	return nil
}
