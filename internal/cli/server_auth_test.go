package cli

import (
	"strings"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
)

func TestServerAuthFlags(t *testing.T) {
	t.Parallel()
	pw := writeFile(t, "pw", "pa55-s3cret\n")
	tok := writeFile(t, "tok", "t0ken-s3cret\r\n")
	empty := writeFile(t, "empty", "\n")
	big := writeFile(t, "big", strings.Repeat("x", maxSecretFile+1))
	global := broker.AuthOptions{User: "worker", Password: "global"}
	for _, tc := range []struct {
		name   string
		args   []string
		auth   broker.ServerAuth
		client broker.AuthOptions
		listen string
		err    string
	}{
		{"none", nil, broker.ServerAuth{}, broker.AuthOptions{}, broker.DefaultListen, ""},
		{"user and password file", []string{"--server-user", "drover", "--server-password-file", pw},
			broker.ServerAuth{User: "drover", Password: "pa55-s3cret"}, broker.AuthOptions{User: "drover", Password: "pa55-s3cret"}, broker.DefaultListen, ""},
		{"token file", []string{"--server-token-file", tok, "--listen", "0.0.0.0:4222"},
			broker.ServerAuth{Token: "t0ken-s3cret"}, broker.AuthOptions{Token: "t0ken-s3cret"}, "0.0.0.0:4222", ""},
		{"token", []string{"--server-token", "t"}, broker.ServerAuth{Token: "t"}, broker.AuthOptions{Token: "t"}, broker.DefaultListen, ""},
		{"config: the file's listen, the global credentials", []string{"--server-config", "n.conf"}, broker.ServerAuth{}, global, "", ""},
		{"config and listen", []string{"--server-config", "n.conf", "--listen", "127.0.0.1:4333"}, broker.ServerAuth{}, global, "127.0.0.1:4333", ""},
		{"config and token", []string{"--server-config", "n.conf", "--server-token", "t"}, broker.ServerAuth{}, global, "", "set the users in the file"},
		{"user without password", []string{"--server-user", "u"}, broker.ServerAuth{}, global, "", "needs --server-password-file or DROVER_SERVER_PASSWORD"},
		{"password without user", []string{"--server-password-file", pw}, broker.ServerAuth{}, global, "", "--server-password needs --server-user"},
		{"user and token", []string{"--server-user", "u", "--server-password", "p", "--server-token", "t"}, broker.ServerAuth{}, global, "", "choose one"},
		{"value and file", []string{"--server-token", "t", "--server-token-file", tok}, broker.ServerAuth{}, global, "", "--server-token and --server-token-file: choose one"},
		{"empty file", []string{"--server-token-file", empty}, broker.ServerAuth{}, global, "", "empty"},
		{"huge file", []string{"--server-token-file", big}, broker.ServerAuth{}, global, "", "not a password or token"},
		{"missing file", []string{"--server-password-file", pw + ".missing", "--server-user", "u"}, broker.ServerAuth{}, global, "", "no such file"},
	} {
		fl := pflag.NewFlagSet("t", pflag.ContinueOnError)
		var a serverAuthFlags
		listen := fl.String("listen", broker.DefaultListen, "")
		addServerAuthFlags(fl, &a)
		require.NoError(t, fl.Parse(tc.args), tc.name)
		err := a.resolve(fl, listen)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.name)
			require.NotContains(t, err.Error(), "s3cret", tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		require.Equal(t, tc.auth, a.auth, tc.name)
		require.Equal(t, tc.client, a.clientAuth(global), tc.name)
		require.Equal(t, tc.listen, *listen, tc.name)
	}
}
