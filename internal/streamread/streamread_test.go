package streamread_test

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/streamread"
)

// TestOrderedConsumerReadsAndIsDeleted: a reader's ordered consumer reads the
// stream, and DeleteConsumer removes it at once, through the stream or
// through StreamOf its name.
func TestOrderedConsumerReadsAndIsDeleted(t *testing.T) {
	_, js := natstest.Connect(t, natstest.Server(t).ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "READ", Subjects: []string{"read.>"}})
	require.NoError(t, err)
	_, err = js.Publish(ctx, "read.a", []byte("one"))
	require.NoError(t, err)

	for _, tc := range []struct {
		name string
		del  streamread.ConsumerDeleter
	}{
		{"stream", st},
		{"stream name", streamread.StreamOf(js, "READ")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cons, err := streamread.OrderedConsumer(ctx, js, "READ", jetstream.OrderedConsumerConfig{})
			require.NoError(t, err)
			msg, err := cons.Next(jetstream.FetchMaxWait(5 * time.Second))
			require.NoError(t, err)
			require.Equal(t, "one", string(msg.Data()))
			// nats.go replaces the consumer OrderedConsumer created on the
			// first fetch and deletes that one in the background: wait for
			// it, so one consumer is left, the one DeleteConsumer names.
			require.Eventually(t, func() bool {
				info, err := st.Info(ctx)
				return err == nil && info.State.Consumers == 1
			}, 10*time.Second, 10*time.Millisecond, "one consumer left after nats.go's own replacement")

			streamread.DeleteConsumer(ctx, tc.del, cons)
			info, err := st.Info(ctx)
			require.NoError(t, err)
			require.Zero(t, info.State.Consumers, "deleted at once, not left to the inactivity threshold")
		})
	}
}

// TestOrderedConsumerMissingStream: a missing stream is final, not retried
// until ctx ends.
func TestOrderedConsumerMissingStream(t *testing.T) {
	_, js := natstest.Connect(t, natstest.Server(t).ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	start := time.Now()
	_, err := streamread.OrderedConsumer(ctx, js, "NOPE", jetstream.OrderedConsumerConfig{})
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound)
	require.Less(t, time.Since(start), 10*time.Second, "no retries")
}

// TestOrderedConsumerEndsWithContext: while JetStream does not answer (the
// server is gone), tries are repeated until ctx ends, and the error names
// the last failure.
func TestOrderedConsumerEndsWithContext(t *testing.T) {
	srv := natstest.Server(t)
	nc, js := natstest.Connect(t, srv.ClientURL())
	_, err := js.CreateStream(context.Background(), jetstream.StreamConfig{Name: "GONE", Subjects: []string{"gone.>"}})
	require.NoError(t, err)
	nc.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = streamread.OrderedConsumer(ctx, js, "GONE", jetstream.OrderedConsumerConfig{})
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Contains(t, err.Error(), "last error")
}
