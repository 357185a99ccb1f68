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
//
// The consumer is shared by every worker of the queue, so its settings are
// one: a consumer that already exists keeps its ack wait, max deliver and
// max ack pending, and a worker whose flags differ logs a warning naming
// both values and runs with the consumer's (heartbeats at a third of its
// ack wait, its max deliver for failing tasks). Only a worker started with
// Reconcile rewrites them to its flags. The filter subject and the absence
// of a backoff are the contract's, and are always restored.
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
	// Reconcile makes an existing consumer take these settings (each
	// change logged) instead of keeping its own.
	Reconcile bool
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
// task stream, shared by every worker of the queue. An existing consumer is
// checked with planConsumer: its filter and backoff are restored to the
// contract's, and its ack wait, max deliver and max ack pending are kept
// (a difference from cs is logged as a warning) unless cs.Reconcile is set.
// Changes are logged to log (slog.Default() if nil). The consumer's
// CachedInfo holds the settings it runs with. Safe to call from many
// workers at once.
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
			return reconcileConsumer(ctx, js, stream, c, want, cs.Reconcile, log)
		}
	}
	if err != nil {
		return nil, fmt.Errorf("consumer %s on %s: %w", want.Durable, stream, err)
	}
	return c, nil
}

// settingDiff is one setting of an existing consumer that differs from
// what the worker wants.
type settingDiff struct {
	setting          string
	consumer, worker any
}

// consumerPlan is what to do with an existing consumer: the configuration
// to write when changes is not empty, and the differences kept.
type consumerPlan struct {
	update  jetstream.ConsumerConfig
	changes []settingDiff // written: worker is the new value
	kept    []settingDiff // the consumer's value wins over the worker's flag
}

// planConsumer decides what becomes of an existing consumer cur when a
// worker wants want. The contract's settings (filter subject, no backoff)
// are always restored. The workers' settings (ack wait, max deliver, max
// ack pending) are the consumer's: a difference is kept and reported,
// unless reconcile makes the consumer take the worker's values. Max deliver
// is reported as the workers' limit, one below the server's.
func planConsumer(cur, want jetstream.ConsumerConfig, reconcile bool) consumerPlan {
	pl := consumerPlan{update: cur}
	worker := func(setting string, differs bool, from, to any, apply func()) {
		switch {
		case !differs:
		case reconcile:
			pl.changes = append(pl.changes, settingDiff{setting, from, to})
			apply()
		default:
			pl.kept = append(pl.kept, settingDiff{setting, from, to})
		}
	}
	worker("ack_wait", cur.AckWait != want.AckWait, cur.AckWait, want.AckWait, func() { pl.update.AckWait = want.AckWait })
	worker("max_deliver", cur.MaxDeliver != want.MaxDeliver, cur.MaxDeliver-1, want.MaxDeliver-1, func() { pl.update.MaxDeliver = want.MaxDeliver })
	worker("max_ack_pending", cur.MaxAckPending != want.MaxAckPending, cur.MaxAckPending, want.MaxAckPending, func() { pl.update.MaxAckPending = want.MaxAckPending })
	if cur.FilterSubject != want.FilterSubject || len(cur.FilterSubjects) > 0 {
		pl.changes = append(pl.changes, settingDiff{"filter_subject", cur.FilterSubject, want.FilterSubject})
		pl.update.FilterSubject, pl.update.FilterSubjects = want.FilterSubject, nil
	}
	if len(cur.BackOff) > 0 {
		pl.changes = append(pl.changes, settingDiff{"backoff", cur.BackOff, "none"})
		pl.update.BackOff = nil
	}
	return pl
}

// reconcileConsumer applies planConsumer to c and logs what it changed and
// what it kept.
func reconcileConsumer(ctx context.Context, js jetstream.JetStream, stream string, c jetstream.Consumer, want jetstream.ConsumerConfig, reconcile bool, log *slog.Logger) (jetstream.Consumer, error) {
	cur := c.CachedInfo().Config
	if cur.AckPolicy != jetstream.AckExplicitPolicy {
		return nil, fmt.Errorf("consumer %s on %s: ack policy is %s, Drover needs explicit; delete the consumer to let workers recreate it", want.Durable, stream, cur.AckPolicy)
	}
	pl := planConsumer(cur, want, reconcile)
	if len(pl.kept) > 0 {
		attrs := []any{"stream", stream, "consumer", want.Durable}
		for _, d := range pl.kept {
			attrs = append(attrs, slog.Group(d.setting, "consumer", d.consumer, "flag", d.worker))
		}
		log.Warn("the consumer's settings differ from this worker's flags; running with the consumer's (--reconcile-consumer rewrites them)", attrs...)
	}
	if len(pl.changes) == 0 {
		return c, nil
	}
	c, err := js.CreateOrUpdateConsumer(ctx, stream, pl.update)
	if err != nil {
		return nil, fmt.Errorf("consumer %s on %s: update: %w", want.Durable, stream, err)
	}
	attrs := []any{"stream", stream, "consumer", want.Durable}
	for _, d := range pl.changes {
		attrs = append(attrs, slog.Group(d.setting, "old", d.consumer, "new", d.worker))
	}
	log.Info("consumer settings changed", attrs...)
	return c, nil
}
