package broker

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// TestEmbeddedAuthRefusesAnonymous starts the embedded server with a token,
// then with a user and password: a client without them is refused, one
// with them gets in, also in process, and can use JetStream.
func TestEmbeddedAuthRefusesAnonymous(t *testing.T) {
	t.Parallel()
	skipShort(t)
	for _, auth := range []ServerAuth{{Token: "t0ken-s3cret"}, {User: "worker", Password: "pa55-s3cret"}} {
		t.Run(auth.String(), func(t *testing.T) {
			t.Parallel()
			e, err := StartEmbedded(EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Auth: auth})
			require.NoError(t, err)
			t.Cleanup(e.Shutdown)

			_, err = Connect(testCtx(t), e.ClientURL(), "anonymous")
			require.ErrorIs(t, err, nats.ErrAuthorization)
			_, err = Connect(testCtx(t), e.ClientURL(), "wrong", nats.Token("guess"), nats.UserInfo("worker", "guess"))
			require.ErrorIs(t, err, nats.ErrAuthorization)

			for name, opts := range map[string][]nats.Option{
				"network":    auth.ClientOptions(),
				"in process": append(auth.ClientOptions(), e.InProcess()),
			} {
				nc, err := Connect(testCtx(t), e.ClientURL(), name, opts...)
				require.NoError(t, err, name)
				js, err := jetstream.New(nc)
				require.NoError(t, err)
				_, err = js.AccountInfo(testCtx(t))
				require.NoError(t, err, name)
				nc.Close()
			}
			require.NotContains(t, fmt.Sprintf("%v %+v %#v %s", auth, auth, auth, auth), "s3cret")
		})
	}
}

// TestEmbeddedConfigFile starts the embedded server from a nats-server
// configuration file with an account and a user whose password comes from
// the environment: anonymous clients are refused, the user gets JetStream.
func TestEmbeddedConfigFile(t *testing.T) {
	skipShort(t)
	t.Setenv("DROVER_TEST_EMBEDDED_PW", "fr0m-env")
	dir := t.TempDir()
	conf := filepath.Join(dir, "server.conf")
	require.NoError(t, os.WriteFile(conf, []byte(`
listen: "127.0.0.1:-1"
accounts {
  DROVER {
    jetstream: enabled
    users = [ {user: worker, password: $DROVER_TEST_EMBEDDED_PW} ]
  }
}
`), 0o600))
	log, logs := newLog()
	e, err := StartEmbedded(EmbeddedConfig{ConfigFile: conf, DataDir: filepath.Join(dir, "data"), Logger: log})
	require.NoError(t, err)
	t.Cleanup(e.Shutdown)
	require.True(t, e.srv.JetStreamConfig().SyncAlways, "the file sets no sync_interval: fsync always")
	require.Equal(t, filepath.Join(dir, "data", server.JetStreamStoreDir), e.srv.JetStreamConfig().StoreDir)

	_, err = Connect(testCtx(t), e.ClientURL(), "anonymous")
	require.ErrorIs(t, err, nats.ErrAuthorization)
	nc, err := Connect(testCtx(t), e.ClientURL(), "worker", nats.UserInfo("worker", "fr0m-env"))
	require.NoError(t, err)
	defer nc.Close()
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	_, err = js.AccountInfo(testCtx(t))
	require.NoError(t, err)
	require.NotContains(t, logs.String(), "without auth")

	for _, cfg := range []EmbeddedConfig{
		{ConfigFile: conf, Auth: ServerAuth{Token: "t"}},
		{ConfigFile: conf, Cluster: ClusterConfig{Listen: "127.0.0.1:0"}},
		{ConfigFile: filepath.Join(dir, "missing.conf")},
		{Auth: ServerAuth{User: "u"}},
		{Auth: ServerAuth{Password: "p"}},
		{Auth: ServerAuth{User: "u", Password: "p", Token: "t"}},
	} {
		cfg.DataDir = t.TempDir()
		cfg.Listen = "127.0.0.1:0"
		if cfg.ConfigFile != "" {
			cfg.Listen = ""
		}
		e, err := StartEmbedded(cfg)
		if e != nil {
			e.Shutdown()
		}
		require.Error(t, err, "%#v", cfg)
	}
}

// TestEmbeddedWarnsWhenExposedWithoutAuth checks the start-up warning: a
// server reachable from other machines that lets anyone in is logged
// loudly; one on loopback, or one that requires auth, is not.
func TestEmbeddedWarnsWhenExposedWithoutAuth(t *testing.T) {
	t.Parallel()
	skipShort(t)
	for _, tc := range []struct {
		listen string
		auth   ServerAuth
		warn   bool
	}{
		{"0.0.0.0:0", ServerAuth{}, true},
		{":0", ServerAuth{}, true},
		{"127.0.0.1:0", ServerAuth{}, false},
		{"0.0.0.0:0", ServerAuth{Token: "t"}, false},
	} {
		log, logs := newLog()
		e, err := StartEmbedded(EmbeddedConfig{Listen: tc.listen, DataDir: t.TempDir(), Auth: tc.auth, Logger: log})
		require.NoError(t, err, tc.listen)
		e.Shutdown()
		if tc.warn {
			require.Contains(t, logs.String(), `level=WARN msg="embedded NATS listens on 0.0.0.0:(random) without auth: anyone who can reach it can submit tasks that run agents on this host"`, tc.listen)
		} else {
			require.NotContains(t, logs.String(), "without auth", tc.listen)
		}
	}
}

func TestExposureWarning(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		opts server.Options
		want string
	}{
		{"any interface", server.Options{Host: "0.0.0.0", Port: 4222}, "embedded NATS listens on 0.0.0.0:4222 without auth: anyone who can reach it can submit tasks that run agents on this host"},
		{"empty host", server.Options{Port: 4222}, "embedded NATS listens on 0.0.0.0:4222 without auth"},
		{"lan address", server.Options{Host: "192.168.1.10", Port: 4222}, "listens on 192.168.1.10:4222 without auth"},
		{"ipv6 any", server.Options{Host: "::", Port: 4222}, "listens on [::]:4222 without auth"},
		{"no_auth_user lets anyone in", server.Options{Host: "0.0.0.0", Port: 4222, Users: []*server.User{{Username: "u"}}, NoAuthUser: "u"}, "without auth"},
		{"loopback", server.Options{Host: "127.0.0.1", Port: 4222}, ""},
		{"localhost", server.Options{Host: "localhost", Port: 4222}, ""},
		{"ipv6 loopback", server.Options{Host: "::1", Port: 4222}, ""},
		{"token", server.Options{Host: "0.0.0.0", Port: 4222, Authorization: "t"}, ""},
		{"user", server.Options{Host: "0.0.0.0", Port: 4222, Username: "u", Password: "p"}, ""},
		{"users", server.Options{Host: "0.0.0.0", Port: 4222, Users: []*server.User{{Username: "u"}}}, ""},
		{"nkeys", server.Options{Host: "0.0.0.0", Port: 4222, Nkeys: []*server.NkeyUser{{Nkey: "U"}}}, ""},
	} {
		got := exposureWarning(&tc.opts)
		if tc.want == "" {
			require.Empty(t, got, tc.name)
		} else {
			require.Contains(t, got, tc.want, tc.name)
		}
	}
}
