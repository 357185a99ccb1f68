package consumers

import (
	"context"
	"errors"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/droverhq/drover/subjects"
)

// ErrClaimLost is the cause of a task context cancelled because the worker
// can no longer be sure it owns the message: it could not send a heartbeat
// for a whole ack wait, so the server may have handed the message on. A
// handler that sees it should write nothing more and return Abandon.
var ErrClaimLost = errors.New("claim lost")

// Msg is a task request message as the consumer received it: one delivery
// of it (jetstream.Msg and its metadata), read for the handler.
type Msg struct {
	// Queue is the queue the request was published to.
	Queue string
	// Body is the request body, untrusted.
	Body   []byte
	Header nats.Header
	// StreamSeq is the request's sequence in the task stream.
	StreamSeq uint64
	// NumDelivered counts this delivery (1 for the first).
	NumDelivered uint64
	// MaxDeliver is the last delivery the workers run: the consumer's
	// max deliver less one, read from the consumer itself. A delivery past
	// it means the worker running the last one stopped.
	MaxDeliver int
	// Timestamp is when the server stored the request.
	Timestamp time.Time
	// Stale, when set, reports that the claim went a whole ack wait
	// without a heartbeat: the server may have handed the message on, so
	// no new work should start.
	Stale func() bool
}

// Action is what the consumer does with a message after its handler.
type Action int

// The actions.
const (
	// Ack: the task completed (or was already complete).
	Ack Action = iota
	// Term: the task ended without completing; its DLQ entry is written.
	Term
	// Nak: run it again after Outcome.Delay (at once when zero).
	Nak
	// Abandon: the claim is lost; send nothing for this message.
	Abandon
)

func (a Action) String() string {
	switch a {
	case Ack:
		return "ack"
	case Term:
		return "term"
	case Nak:
		return "nak"
	case Abandon:
		return "abandon"
	}
	return "unknown"
}

// Outcome is what a handler decided for one message.
type Outcome struct {
	Action Action
	// Delay is how long a Nak waits before the redelivery.
	Delay time.Duration
	// Terminal is the terminal event written, if any.
	Terminal subjects.EventType
	// Reason is the DLQ reason, for Term.
	Reason subjects.Reason
	Err    error
	// RetryInPlace, with Nak, asks the consumer to run the same delivery again
	// after Delay while it keeps the message claimed (in-progress
	// heartbeats), instead of a nak that spends a delivery: for a fault of
	// the server (storage full, no quorum), not of the task. The delay
	// doubles up to the consumer's RetryMax; holding ends when the claim
	// goes stale or the consumer stops, and then the Nak is sent.
	RetryInPlace bool
}

// Handler runs one message and says what to do with it. Drover's pipeline
// is one.
type Handler interface {
	Handle(ctx context.Context, m Msg) Outcome
}

// Poisoner is a Handler that can end a task whose handling panicked on its
// last allowed delivery: it writes the task's DLQ entry and its terminal
// task_failed event, and returns Term. The consumer calls it instead of
// Handle once a message has panicked through its deliveries; without it (or
// when it panics too) the consumer copies the request to the DLQ itself and
// terminates the message.
type Poisoner interface {
	Poison(ctx context.Context, m Msg, cause error) Outcome
}
