package mergequeue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// Entry is one approved branch waiting for its target.
type Entry struct {
	Workflow string    `json:"workflow"`
	Task     string    `json:"task"`
	Branch   string    `json:"branch"`
	Head     string    `json:"head"`
	Attempt  int       `json:"attempt"`
	Target   string    `json:"target"`
	Enqueued time.Time `json:"enqueued"`
}

// Key names an entry for deduplication: {workflow, task, head}.
func (e Entry) Key() string { return subjects.TaskMsgID(e.Workflow, e.Task) + "/" + e.Head }

// Validate checks the fields a merger relies on.
func (e Entry) Validate() error {
	switch {
	case e.Workflow == "" || e.Task == "":
		return fmt.Errorf("%w: workflow and task are required", ErrInvalidEntry)
	case subjects.ValidBranch(e.Branch) != nil, subjects.ValidBranch(e.Target) != nil:
		return fmt.Errorf("%w: branch %.80q or target %.80q", ErrInvalidEntry, e.Branch, e.Target)
	case !workspace.IsSHA(e.Head):
		return fmt.Errorf("%w: head %.80q is not a commit id", ErrInvalidEntry, e.Head)
	}
	return nil
}

// Enqueue puts e in its target's queue. The message id is e.Key(), so the
// same head of the same task enqueued twice within the stream's duplicate
// window is stored once.
func Enqueue(ctx context.Context, js jetstream.JetStream, n Names, e Entry) error {
	if err := e.Validate(); err != nil {
		return err
	}
	if e.Enqueued.IsZero() {
		e.Enqueued = time.Now().UTC()
	}
	data, err := json.Marshal(e)
	if err != nil {
		return err
	}
	msg := nats.NewMsg(n.Subject(e.Target))
	msg.Data = data
	msg.Header.Set(jetstream.MsgIDHeader, e.Key())
	if _, err := js.PublishMsg(ctx, msg); err != nil {
		return fmt.Errorf("mergequeue: enqueue %s/%s: %w", e.Workflow, e.Task, err)
	}
	return nil
}
