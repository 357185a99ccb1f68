package broker

import (
	"context"
	"net"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestEmbeddedSyncAlwaysAndRandomPort(t *testing.T) {
	t.Parallel()
	e := startServer(t)
	require.True(t, e.srv.JetStreamConfig().SyncAlways, "Sync 0 must fsync before every ack")

	u, err := url.Parse(e.ClientURL())
	require.NoError(t, err)
	require.NotEqual(t, "0", u.Port())
	nc, err := Connect(context.Background(), e.ClientURL(), "probe")
	require.NoError(t, err)
	defer nc.Close()
	require.NoError(t, nc.Flush())
}

func TestEmbeddedSyncInterval(t *testing.T) {
	t.Parallel()
	skipShort(t)
	e, err := StartEmbedded(EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Sync: 5 * time.Second})
	require.NoError(t, err)
	t.Cleanup(e.Shutdown)
	cfg := e.srv.JetStreamConfig()
	require.False(t, cfg.SyncAlways)
	require.Equal(t, 5*time.Second, cfg.SyncInterval)
}

func TestEmbeddedPortInUse(t *testing.T) {
	t.Parallel()
	skipShort(t)
	first := startServer(t)
	u, err := url.Parse(first.ClientURL())
	require.NoError(t, err)
	addr := net.JoinHostPort("127.0.0.1", u.Port())

	second, err := StartEmbedded(EmbeddedConfig{Listen: addr, DataDir: t.TempDir()})
	if second != nil {
		second.Shutdown()
	}
	require.Error(t, err)
	require.Contains(t, err.Error(), addr)
	require.NotContains(t, err.Error(), "not ready for connections", "a taken port fails at once, not after the readiness wait")
}

func TestEmbeddedBadConfig(t *testing.T) {
	t.Parallel()
	for _, cfg := range []EmbeddedConfig{
		{Listen: "no-port", DataDir: t.TempDir()},
		{Listen: "127.0.0.1:99999", DataDir: t.TempDir()},
		{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Sync: -time.Second},
	} {
		_, err := StartEmbedded(cfg)
		require.Error(t, err, "%+v", cfg)
	}
}

func TestConnectFailsWithoutLeakingCredentials(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close()) // nothing listens there now

	_, err = Connect(context.Background(), "nats://user:s3cret@"+addr, "probe")
	require.Error(t, err)
	require.Contains(t, err.Error(), addr)
	require.NotContains(t, err.Error(), "s3cret")

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err = Connect(ctx, "nats://"+addr, "probe")
	require.ErrorIs(t, err, context.Canceled)
}

func TestParseSync(t *testing.T) {
	d, err := ParseSync("always")
	require.NoError(t, err)
	require.Zero(t, d)
	d, err = ParseSync("2m")
	require.NoError(t, err)
	require.Equal(t, 2*time.Minute, d)
	for _, bad := range []string{"", "0s", "-1s", "sometimes"} {
		_, err := ParseSync(bad)
		require.Error(t, err, bad)
	}
}
