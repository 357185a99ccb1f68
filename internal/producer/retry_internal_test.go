package producer

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// Which publish errors leave it unknown whether the server stored the
// request (retried with the same Nats-Msg-Id), and which are answers.
func TestAckLost(t *testing.T) {
	t.Parallel()
	cases := []struct {
		err  error
		lost bool
	}{
		{context.DeadlineExceeded, true},
		{fmt.Errorf("publish: %w", context.DeadlineExceeded), true},
		{nats.ErrTimeout, true},
		{nats.ErrNoResponders, true},
		{jetstream.ErrNoStreamResponse, true},
		{nats.ErrConnectionReconnecting, true},
		{nats.ErrDisconnected, true},
		{nats.ErrStaleConnection, true},
		{context.Canceled, false},
		{nats.ErrConnectionClosed, false},
		{nats.ErrMaxPayload, false},
		{nats.ErrBadSubject, false},
		{&jetstream.APIError{Code: 400, ErrorCode: jetstream.JSErrCodeMessageNotFound, Description: "refused"}, false},
		{errors.New("wrong last sequence"), false},
	}
	for _, c := range cases {
		require.Equal(t, c.lost, ackLost(c.err), "%v", c.err)
	}
}

func TestPublishMsgNeedsMsgID(t *testing.T) {
	t.Parallel()
	_, err := PublishMsg(context.Background(), nil, &nats.Msg{Subject: "x", Header: nats.Header{}})
	require.ErrorContains(t, err, "Nats-Msg-Id")
}
