package pipeline

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// Which write errors hold a delivery (the server's fault) and which spend
// it (a nak).
func TestServerFault(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		hold bool
	}{
		{nil, false},
		{fmt.Errorf("state: update: %w", &jetstream.APIError{Code: 503, ErrorCode: 10023, Description: "insufficient resources"}), true},
		{&jetstream.APIError{Code: 503, ErrorCode: 10008, Description: "JetStream system temporarily unavailable"}, true},
		{fmt.Errorf("audit: %w", context.DeadlineExceeded), true},
		{nats.ErrTimeout, true},
		{nats.ErrNoResponders, true},
		{context.Canceled, false},
		{&jetstream.APIError{Code: 400, ErrorCode: 10071, Description: "wrong last sequence"}, false},
		{errors.New("state kept changing while claiming the task"), false},
	}
	for _, c := range cases {
		require.Equal(t, c.hold, serverFault(c.err), "%v", c.err)
	}
}
