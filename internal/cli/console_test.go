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
	for _, tc := range []struct {
		addr string
		auth console.Auth
		ok   bool
	}{
		{"127.0.0.1:8090", console.Auth{}, true},
		{"127.8.9.1:8090", console.Auth{}, true},
		{"[::1]:8090", console.Auth{}, true},
		{"localhost:8090", console.Auth{}, true},
		{"0.0.0.0:8090", console.Auth{}, false},
		{":8090", console.Auth{}, false},
		{"[::]:8090", console.Auth{}, false},
		{"192.168.1.5:8090", console.Auth{}, false},
		{"console.example.com:8090", console.Auth{}, false},
		{"0.0.0.0:8090", basic, true},
		{":8090", token, true},
	} {
		err := checkConsoleListen(tc.addr, tc.auth)
		if tc.ok {
			assert.NoError(t, err, tc.addr)
		} else {
			assert.ErrorIs(t, err, ErrConsoleOpen, tc.addr)
		}
	}
	assert.Error(t, checkConsoleListen("no-port", console.Auth{}))
}

// drover console refuses a non-loopback address without auth before it
// connects to anything (no NATS server runs here).
func TestConsoleCommandRefusesOpenBind(t *testing.T) {
	for _, args := range [][]string{
		{"console", "--listen", "0.0.0.0:0"},
		{"console", "--listen", ":0"},
		{"serve", "--console", "--http", "0.0.0.0:0", "--nats-url", "nats://127.0.0.1:1"},
	} {
		var out, errOut bytes.Buffer
		code := Execute(context.Background(), append([]string{"--log-level", "error", "--nats-url", "nats://127.0.0.1:1"}, args...), &out, &errOut)
		require.Equal(t, 1, code, "%v", args)
		assert.Contains(t, errOut.String(), ErrConsoleOpen.Error(), "%v", args)
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
			assert.ErrorContains(t, err, tc.err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}
