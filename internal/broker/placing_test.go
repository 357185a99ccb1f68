package broker

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// WhilePlacing tries again only while the cluster cannot place replicas
// (the server's "no suitable peers for placement"), and stops at once on
// any other error or when its context ends.
func TestWhilePlacingDecides(t *testing.T) {
	t.Parallel()
	noPeers := fmt.Errorf("provision: stream X: %w", &jetstream.APIError{Code: 400, ErrorCode: ErrNoPeers, Description: "no suitable peers for placement, peer offline"})
	other := &jetstream.APIError{Code: 400, ErrorCode: 10058, Description: "stream name already in use with a different configuration"}
	cases := []struct {
		name  string
		errs  []error // what create returns, call by call
		want  error
		calls int
	}{
		{"placed at once", []error{nil}, nil, 1},
		{"placed once the peers report", []error{noPeers, noPeers, nil}, nil, 3},
		{"another API error is final", []error{other}, other, 1},
		{"a plain error is final", []error{errors.New("boom")}, errors.New("boom"), 1},
		{"another error after waiting is final", []error{noPeers, other}, other, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			calls := 0
			err := WhilePlacing(context.Background(), nil, func() error {
				calls++
				return c.errs[calls-1]
			})
			require.Equal(t, c.calls, calls)
			if c.want == nil {
				require.NoError(t, err)
			} else {
				require.EqualError(t, err, c.want.Error())
			}
		})
	}
	t.Run("context ends", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		calls := 0
		err := WhilePlacing(ctx, nil, func() error {
			calls++
			cancel()
			return noPeers
		})
		require.ErrorIs(t, err, context.Canceled)
		require.Equal(t, 1, calls)
	})
}
