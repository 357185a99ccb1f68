package cli

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
)

// TestControlRequestCancel: Ctrl-C ends a control request at once, whether
// it came before the request or while waiting for a worker that does not
// answer, instead of waiting out --timeout.
func TestControlRequestCancel(t *testing.T) {
	t.Parallel()
	srv := natstest.Server(t)
	nc, _ := natstest.Connect(t, srv.ClientURL())
	const subject = "drover.ctl.workflow.wf.pause"
	for _, tc := range []struct {
		name string
		// atOnce cancels the request's context before it is sent; else
		// the silent responder cancels it when the request arrives.
		atOnce bool
	}{
		{"cancelled before", true},
		{"cancelled while waiting", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tc.atOnce {
				cancel()
			}
			// A responder that never answers: the request has someone to
			// wait for, and the wait is only ended by the cancel.
			sub, err := nc.Subscribe(subject, func(*nats.Msg) { cancel() })
			require.NoError(t, err)
			defer func() { _ = sub.Unsubscribe() }()
			require.NoError(t, nc.Flush())

			start := time.Now()
			_, err = controlRequest(ctx, nc, subject, []byte(`{}`), time.Minute)
			require.ErrorIs(t, err, context.Canceled)
			require.Less(t, time.Since(start), 10*time.Second, "a cancelled request returns promptly, not after its timeout")
		})
	}
}
