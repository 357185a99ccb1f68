package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// Defaults of ConsumerSettings.
const (
	DefaultAckWait       = 30 * time.Second
	DefaultMaxDeliver    = 5
	DefaultMaxAckPending = 1000
)

// ConsumerSettings are a worker's flags for its queue's consumer.
type ConsumerSettings struct {
	// AckWait is how long a delivery may go without an ack or in-progress
	// signal before it is redelivered (default 30s).
	AckWait time.Duration
	// MaxDeliver is the workers' max deliver (default 5); the server's is
	// one more, so a worker that dies on the last delivery leaves one to
	// fail the task.
	MaxDeliver int
	// MaxAckPending bounds the deliveries outstanding across all workers
	// of the queue (default 1000).
	MaxAckPending int
}

func (cs ConsumerSettings) withDefaults() (ConsumerSettings, error) {
	if cs.AckWait < 0 || cs.MaxDeliver < 0 || cs.MaxAckPending < 0 {
		return cs, fmt.Errorf("consumer settings: negative value in %+v", cs)
	}
	if cs.AckWait == 0 {
		cs.AckWait = DefaultAckWait
	}
	if cs.MaxDeliver == 0 {
		cs.MaxDeliver = DefaultMaxDeliver
	}
	if cs.MaxAckPending == 0 {
		cs.MaxAckPending = DefaultMaxAckPending
	}
	return cs, nil
}

// EnsureConsumer creates or gets the durable pull consumer of queue on the
// task stream, shared by every worker of the queue. If the existing
// consumer's ack wait, max deliver, max ack pending, filter or backoff
// differ from cs and the contract, it is updated and each change is logged
// to log (slog.Default() if nil). Safe to call from many workers at once.
func EnsureConsumer(ctx context.Context, js jetstream.JetStream, names subjects.Names, queue string, cs ConsumerSettings, log *slog.Logger) (jetstream.Consumer, error) {
	if err := subjects.ValidateQueue(queue); err != nil {
		return nil, fmt.Errorf("ensure consumer: %w", err)
	}
	cs, err := cs.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("ensure consumer: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	stream := names.TasksStream()
	want := jetstream.ConsumerConfig{
		Durable:       names.Consumer(queue),
		FilterSubject: names.TaskSubject(queue),
		DeliverPolicy: jetstream.DeliverAllPolicy,
		AckPolicy:     jetstream.AckExplicitPolicy,
		AckWait:       cs.AckWait,
		MaxDeliver:    cs.MaxDeliver + 1,
		MaxAckPending: cs.MaxAckPending,
	}
	// The server accepts a create with an identical config; it refuses one
	// that differs from the existing consumer, which is then reconciled.
	c, err := js.CreateConsumer(ctx, stream, want)
	if errors.Is(err, jetstream.ErrConsumerExists) {
		if c, err = js.Consumer(ctx, stream, want.Durable); err == nil {
			return reconcileConsumer(ctx, js, stream, c, want, log)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("consumer %s on %s: %w", want.Durable, stream, err)
	}
	return c, nil
}

// reconcileConsumer updates c's editable settings to want's and logs each
// change.
func reconcileConsumer(ctx context.Context, js jetstream.JetStream, stream string, c jetstream.Consumer, want jetstream.ConsumerConfig, log *slog.Logger) (jetstream.Consumer, error) {
	cur := c.CachedInfo().Config
	if cur.AckPolicy != jetstream.AckExplicitPolicy {
		return nil, fmt.Errorf("consumer %s on %s: ack policy is %s, Drover needs explicit; delete the consumer to let workers recreate it", want.Durable, stream, cur.AckPolicy)
	}
	upd := cur
	var changes []any
	set := func(setting string, differs bool, from, to any, apply func()) {
		if differs {
			changes = append(changes, slog.Group(setting, "old", from, "new", to))
			apply()
		}
	}
	set("ack_wait", cur.AckWait != want.AckWait, cur.AckWait, want.AckWait, func() { upd.AckWait = want.AckWait })
	set("max_deliver", cur.MaxDeliver != want.MaxDeliver, cur.MaxDeliver, want.MaxDeliver, func() { upd.MaxDeliver = want.MaxDeliver })
	set("max_ack_pending", cur.MaxAckPending != want.MaxAckPending, cur.MaxAckPending, want.MaxAckPending, func() { upd.MaxAckPending = want.MaxAckPending })
	set("filter_subject", cur.FilterSubject != want.FilterSubject || len(cur.FilterSubjects) > 0,
		cur.FilterSubject, want.FilterSubject, func() { upd.FilterSubject, upd.FilterSubjects = want.FilterSubject, nil })
	set("backoff", len(cur.BackOff) > 0, cur.BackOff, "none", func() { upd.BackOff = nil })
	if len(changes) == 0 {
		return c, nil
	}
	c, err := js.CreateOrUpdateConsumer(ctx, stream, upd)
	if err != nil {
		return nil, fmt.Errorf("consumer %s on %s: update: %w", want.Durable, stream, err)
	}
	log.Info("consumer settings changed", append([]any{"stream", stream, "consumer", want.Durable}, changes...)...)
	return c, nil
}
