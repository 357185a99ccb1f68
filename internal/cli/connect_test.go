package cli

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
)

// authCmd is a command with the global connection flags, parsed from args.
func authCmd(t *testing.T, args ...string) (*cobra.Command, *globals) {
	t.Helper()
	g := &globals{}
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	cmd.PersistentFlags().StringVar(&g.natsURL, "nats-url", "", "")
	addAuthFlags(cmd.PersistentFlags(), &g.auth)
	require.NoError(t, cmd.ParseFlags(args))
	return cmd, g
}

func TestAuthFlagsReadTheNatsCLIEnvAndDroverEnv(t *testing.T) {
	t.Parallel()
	env := map[string]string{
		"NATS_URL": "nats://a:4222", "NATS_USER": "nats-user", "DROVER_USER": "drover-user",
		"NATS_PASSWORD": "pw", "NATS_TOKEN": "tok", "NATS_NKEY": "/k.nk", "NATS_CREDS": "/u.creds",
		"NATS_CERT": "/c.pem", "NATS_KEY": "/k.pem", "NATS_CA": "/ca.pem", "DROVER_TLSFIRST": "true",
	}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	cmd, g := authCmd(t, "--creds", "/flag.creds")
	require.NoError(t, applyEnvFrom(cmd, lookup))
	require.Equal(t, "nats://a:4222", g.natsURL)
	require.Equal(t, broker.AuthOptions{
		User: "drover-user", Password: "pw", Token: "tok", NkeyFile: "/k.nk", CredsFile: "/flag.creds",
		TLSCert: "/c.pem", TLSKey: "/k.pem", TLSCA: "/ca.pem", TLSFirst: true,
	}, g.auth, "DROVER_* beats NATS_*, a flag beats both")
}

func TestAuthEnvErrorNeverEchoesASecret(t *testing.T) {
	t.Parallel()
	cmd, _ := authCmd(t)
	cmd.Flags().Lookup("password").Value = failingValue{}
	err := applyEnvFrom(cmd, func(k string) (string, bool) { return "hunter2", k == "NATS_PASSWORD" })
	require.ErrorContains(t, err, "NATS_PASSWORD")
	require.NotContains(t, err.Error(), "hunter2")
}

// failingValue is a flag value that refuses every Set.
type failingValue struct{}

func (failingValue) String() string   { return "" }
func (failingValue) Set(string) error { return errors.New("bad value") }
func (failingValue) Type() string     { return "string" }

func TestHelpNamesTheAuthEnvVariables(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.Equal(t, 0, Execute(context.Background(), []string{"--help"}, &out, &out))
	for _, v := range []string{"NATS_URL", "NATS_USER", "NATS_PASSWORD", "NATS_TOKEN", "NATS_NKEY", "NATS_CREDS", "NATS_CERT", "NATS_KEY", "NATS_CA", "DROVER_TLSFIRST"} {
		require.Contains(t, out.String(), v)
	}
}
