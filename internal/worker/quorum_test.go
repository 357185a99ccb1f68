package worker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// Which readiness failures are reported as no quorum.
func TestNoQuorum(t *testing.T) {
	t.Parallel()
	unavailable := &jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"ok", nil, false},
		{"timeout", fmt.Errorf("JetStream: stream DROVER_AUDIT: %w", context.DeadlineExceeded), true},
		{"nats timeout", nats.ErrTimeout, true},
		{"no responders", nats.ErrNoResponders, true},
		{"no stream response", jetstream.ErrNoStreamResponse, true},
		{"temporarily unavailable", fmt.Errorf("info: %w", unavailable), true},
		{"JetStream not enabled", jetstream.ErrJetStreamNotEnabled, false},
		{"stream deleted", jetstream.ErrStreamNotFound, false},
		{"permission", errors.New("nats: permissions violation"), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := noQuorum(c.err)
			require.Equal(t, c.want, errors.Is(got, ErrNoQuorum), "%v", got)
			if c.err != nil {
				require.ErrorIs(t, got, c.err, "the cause is kept")
			}
		})
	}
}
