package mergequeue

import (
	"context"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// logMaxAge is how long merger sessions stay in the merge log.
const logMaxAge = 7 * 24 * time.Hour

// Provision creates or updates the queue stream, the merge log, the lease
// bucket (its age limit is cfg.LeaseTTL) and target's durable consumer (its
// ack wait is cfg.LeaseTTL).
func Provision(ctx context.Context, js jetstream.JetStream, n Names, cfg Config) (jetstream.Consumer, jetstream.KeyValue, error) {
	cfg = cfg.WithDefaults()
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: n.Stream(), Subjects: []string{n.prefix + ".merge.*"},
		Retention: jetstream.WorkQueuePolicy, Storage: jetstream.FileStorage,
		Duplicates: 10 * time.Minute, MaxMsgSize: 1 << 16,
	}); err != nil {
		return nil, nil, fmt.Errorf("mergequeue: stream: %w", err)
	}
	if _, err := js.CreateOrUpdateStream(ctx, jetstream.StreamConfig{
		Name: n.LogStream(), Subjects: []string{n.prefix + ".merge_log.*"},
		Retention: jetstream.LimitsPolicy, Storage: jetstream.FileStorage,
		MaxAge: logMaxAge, MaxMsgSize: 1 << 16,
	}); err != nil {
		return nil, nil, fmt.Errorf("mergequeue: log stream: %w", err)
	}
	kv, err := js.CreateOrUpdateKeyValue(ctx, jetstream.KeyValueConfig{
		Bucket: n.LeaseBucket(), History: 1, TTL: cfg.LeaseTTL, Storage: jetstream.FileStorage,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("mergequeue: lease bucket: %w", err)
	}
	cons, err := js.CreateOrUpdateConsumer(ctx, n.Stream(), jetstream.ConsumerConfig{
		Durable: n.Consumer(cfg.Target), FilterSubject: n.Subject(cfg.Target),
		AckPolicy: jetstream.AckExplicitPolicy, AckWait: cfg.LeaseTTL,
		MaxAckPending: 4 * cfg.Batch, MaxDeliver: -1,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("mergequeue: consumer: %w", err)
	}
	return cons, kv, nil
}
