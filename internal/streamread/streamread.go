// Package streamread owns the ephemeral readers of JetStream streams: the
// ordered consumers that the audit replay, the DLQ listing, the producer's
// wait for terminal events, the cache and lessons admin and blob retention
// create to read a stream once, and their prompt deletion.
package streamread

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/backoff"
)

// ConsumerDeleter deletes consumers of one stream: a jetstream.Stream, or
// StreamOf a stream name.
type ConsumerDeleter interface {
	DeleteConsumer(ctx context.Context, consumer string) error
}

// StreamOf deletes consumers of the named stream through js, without
// looking the stream up first.
func StreamOf(js jetstream.JetStream, stream string) ConsumerDeleter { return streamOf{js, stream} }

type streamOf struct {
	js     jetstream.JetStream
	stream string
}

func (s streamOf) DeleteConsumer(ctx context.Context, consumer string) error {
	return s.js.DeleteConsumer(ctx, s.stream, consumer)
}

// DeleteConsumer deletes a reader's ephemeral consumer at once rather than
// leaving it to the server's inactivity threshold. It runs after ctx may
// have ended, so it uses its own short deadline; a failure is harmless,
// since the server removes an idle consumer by itself.
func DeleteConsumer(ctx context.Context, s ConsumerDeleter, cons jetstream.Consumer) {
	info := cons.CachedInfo()
	if info == nil {
		return
	}
	dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer cancel()
	_ = s.DeleteConsumer(dctx, info.Name)
}

// OrderedConsumer creates an ordered consumer, retrying while JetStream is
// briefly unavailable (a leader election on a cluster answers 503 or not at
// all) until ctx ends. Each attempt has its own deadline, so a request lost
// with a server that died is asked again instead of waiting out ctx. A
// missing stream is final.
func OrderedConsumer(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig) (jetstream.Consumer, error) {
	for try := 1; ; try++ {
		actx, cancel := context.WithTimeout(ctx, orderedCreateTimeout)
		cons, err := js.OrderedConsumer(actx, stream, cfg)
		cancel()
		if err == nil || errors.Is(err, jetstream.ErrStreamNotFound) {
			return cons, err
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		}
		if backoff.Sleep(ctx, orderedCreateBackoff.Delay(try)) != nil {
			return nil, fmt.Errorf("%w (last error: %v)", ctx.Err(), err)
		}
	}
}

// orderedCreateBackoff is the wait after failed try n to create an ordered
// consumer: 100ms, doubling, capped at 2s.
var orderedCreateBackoff = backoff.Policy{Base: 100 * time.Millisecond, Max: 2 * time.Second}

// orderedCreateTimeout bounds one attempt to create an ordered consumer:
// nats.go's default API timeout.
const orderedCreateTimeout = 5 * time.Second
