package cli

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/console"
)

func TestCheckConsoleListen(t *testing.T) {
	basic := console.Auth{User: "ann", Password: "pw"}
	token := console.Auth{Token: "t"}
	hosts := []string{"console.example.com"}
	for _, tc := range []struct {
		addr    string
		auth    console.Auth
		allowed []string
		err     error
	}{
		{"127.0.0.1:8090", console.Auth{}, nil, nil},
		{"127.8.9.1:8090", console.Auth{}, nil, nil},
		{"[::1]:8090", console.Auth{}, nil, nil},
		{"localhost:8090", console.Auth{}, nil, nil},
		{"127.0.0.1:8090", console.Auth{}, hosts, nil},
		{"0.0.0.0:8090", console.Auth{}, nil, ErrConsoleOpen},
		{":8090", console.Auth{}, nil, ErrConsoleOpen},
		{"[::]:8090", console.Auth{}, nil, ErrConsoleOpen},
		{"192.168.1.5:8090", console.Auth{}, nil, ErrConsoleOpen},
		{"console.example.com:8090", console.Auth{}, nil, ErrConsoleOpen},
		{"0.0.0.0:8090", console.Auth{}, hosts, ErrConsoleOpen},
		{"0.0.0.0:8090", basic, nil, ErrConsoleHosts},
		{":8090", token, nil, ErrConsoleHosts},
		{"0.0.0.0:8090", basic, hosts, nil},
		{":8090", token, []string{"10.0.0.5:8090", "console.example.com"}, nil},
		{"127.0.0.1:8090", console.Auth{}, []string{"http://console.example.com"}, console.ErrAllowedHost},
		{":8090", token, []string{"*"}, console.ErrAllowedHost},
	} {
		err := checkConsoleListen(tc.addr, tc.auth, tc.allowed, "")
		if tc.err == nil {
			require.NoError(t, err, "%s %v", tc.addr, tc.allowed)
		} else {
			require.ErrorIs(t, err, tc.err, "%s %v", tc.addr, tc.allowed)
		}
	}
	require.Error(t, checkConsoleListen("no-port", console.Auth{}, nil, ""))
	assert.ErrorContains(t, checkConsoleListen(":8090", token, nil, "console-"), "--console-allowed-host")
}

// drover console refuses a non-loopback address without auth, or without
// an allowed host, and a malformed allowed host, before it connects to
// anything (no NATS server runs here); DROVER_ALLOWED_HOST sets the flag.
func TestConsoleCommandRefusesOpenBind(t *testing.T) {
	t.Setenv("DROVER_ZZ_CONSOLE_TOKEN", "t0k")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"console", "--listen", "0.0.0.0:0"}, ErrConsoleOpen.Error()},
		{[]string{"console", "--listen", ":0"}, ErrConsoleOpen.Error()},
		{[]string{"serve", "--console", "--http", "0.0.0.0:0", "--nats-url", "nats://127.0.0.1:1"}, ErrConsoleOpen.Error()},
		{[]string{"console", "--listen", ":0", "--auth-token-env", "DROVER_ZZ_CONSOLE_TOKEN"}, ErrConsoleHosts.Error()},
		{[]string{"serve", "--console", "--http", "0.0.0.0:0", "--nats-url", "nats://127.0.0.1:1", "--console-auth-token-env", "DROVER_ZZ_CONSOLE_TOKEN"},
			"--console-allowed-host console.example.com"},
		{[]string{"console", "--allowed-host", "https://console.example.com"}, console.ErrAllowedHost.Error()},
		{[]string{"console", "--max-event-streams", "0"}, "--max-event-streams 0: want at least 1"},
	} {
		var out, errOut bytes.Buffer
		code := Execute(context.Background(), append([]string{"--log-level", "error", "--nats-url", "nats://127.0.0.1:1"}, tc.args...), &out, &errOut)
		require.Equal(t, 1, code, "%v", tc.args)
		assert.Contains(t, errOut.String(), tc.want, "%v", tc.args)
	}
}

// The allowed hosts come from the flag, repeated or comma-separated, or
// from DROVER_ALLOWED_HOST.
func TestConsoleAllowedHostFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  string
		want []string
	}{
		{nil, "", nil},
		{[]string{"--allowed-host", "a.example", "--allowed-host", "b.example:8443"}, "", []string{"a.example", "b.example:8443"}},
		{[]string{"--allowed-host", "a.example,[fd00::1]:80"}, "", []string{"a.example", "[fd00::1]:80"}},
		{nil, "a.example,b.example", []string{"a.example", "b.example"}},
		{[]string{"--allowed-host", "c.example"}, "a.example", []string{"c.example"}},
	} {
		cmd := newConsoleCmd(&globals{})
		require.NoError(t, cmd.ParseFlags(tc.args))
		require.NoError(t, applyEnvFrom(cmd, func(k string) (string, bool) {
			return tc.env, k == "DROVER_ALLOWED_HOST" && tc.env != ""
		}))
		got, err := cmd.Flags().GetStringSlice("allowed-host")
		require.NoError(t, err)
		if tc.want == nil {
			assert.Empty(t, got, "%v %q", tc.args, tc.env)
		} else {
			assert.Equal(t, tc.want, got, "%v %q", tc.args, tc.env)
		}
	}
}

func TestConsoleAuthFlags(t *testing.T) {
	env := map[string]string{"PW": "secret", "TOK": "t0k", "EMPTY": ""}
	lookup := func(k string) (string, bool) { v, ok := env[k]; return v, ok }
	for _, tc := range []struct {
		name  string
		flags consoleAuthFlags
		want  console.Auth
		err   string
	}{
		{"none", consoleAuthFlags{}, console.Auth{}, ""},
		{"basic", consoleAuthFlags{user: "ann", passwordEnv: "PW"}, console.Auth{User: "ann", Password: "secret"}, ""},
		{"token", consoleAuthFlags{tokenEnv: "TOK"}, console.Auth{Token: "t0k"}, ""},
		{"unset variable", consoleAuthFlags{tokenEnv: "NOPE"}, console.Auth{}, "NOPE is not set"},
		{"empty variable", consoleAuthFlags{user: "ann", passwordEnv: "EMPTY"}, console.Auth{}, "EMPTY is not set"},
		{"user without password", consoleAuthFlags{user: "ann"}, console.Auth{}, "needs --auth-password-env"},
		{"password without user", consoleAuthFlags{passwordEnv: "PW"}, console.Auth{}, "needs --auth-user"},
	} {
		got, err := tc.flags.resolve("", lookup)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}
