package broker

import (
	"context"
	"net"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestConnectErrorHidesCredentials connects to a closed port with URLs
// that carry credentials, with and without a scheme: the error names the
// server, never the password.
func TestConnectErrorHidesCredentials(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now
	for _, url := range []string{
		"worker:pw-s3cret-1@" + addr,
		"nats://worker:pw-s3cret-1@" + addr,
		"tls://pw-s3cret-1@" + addr,
	} {
		_, err := Connect(context.Background(), url, "t")
		require.Error(t, err, url)
		require.NotContains(t, err.Error(), "pw-s3cret-1", url)
		require.Contains(t, err.Error(), addr, url)
	}
}
