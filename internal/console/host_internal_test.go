package console

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// Which Host values a console on port 8090 serves, with and without an
// allowed-host list.
func TestHostAllowed(t *testing.T) {
	t.Parallel()
	plain, err := New(Deps{Names: subjects.MustNames(subjects.DefaultPrefix), Log: natstest.Quiet()}, Config{})
	require.NoError(t, err)
	listed, err := New(Deps{Names: subjects.MustNames(subjects.DefaultPrefix), Log: natstest.Quiet()},
		Config{AllowedHosts: []string{"Console.Example.com", "10.0.0.5:8443", "[fd00::1]", "dev.localhost:8090"}})
	require.NoError(t, err)
	for _, tc := range []struct {
		host          string
		plain, listed bool
	}{
		{"127.0.0.1:8090", true, true},
		{"127.8.9.1:8090", true, true},
		{"localhost:8090", true, true},
		{"LOCALHOST:8090", true, true},
		{"[::1]:8090", true, true},
		{"[::ffff:127.0.0.1]:8090", true, true},
		{"127.0.0.1:8091", false, false},           // another port
		{"localhost", false, false},                // port 80, not ours
		{"localhost.:8090", false, false},          // a DNS name
		{"localhost.evil.test:8090", false, false}, // rebindable
		{"127.0.0.1.evil.test:8090", false, false},
		{"dev.localhost:8090", false, true}, // only when listed
		{"evil.test:8090", false, false},
		{"evil.test", false, false},
		{"", false, false},
		{"::1", false, false},                 // IPv6 without brackets
		{"[::1", false, false},                //
		{"[::1]x", false, false},              //
		{"127.0.0.1:8090/x", false, false},    //
		{"user@127.0.0.1:8090", false, false}, //
		{"127.0.0.1:", false, false},          //
		{"console.example.com", false, true},  // any port when listed without one
		{"console.example.com:8443", false, true},
		{"CONSOLE.example.com:1", false, true},
		{"x.console.example.com", false, false},
		{"10.0.0.5:8443", false, true},
		{"10.0.0.5:8090", false, false}, // listed with another port
		{"10.0.0.5", false, false},
		{"[fd00::1]:9", false, true},
		{"[fd00::2]:8090", false, false},
	} {
		assert.Equal(t, tc.plain, plain.hostAllowed(tc.host, "8090", false), "%q without a list", tc.host)
		assert.Equal(t, tc.listed, listed.hostAllowed(tc.host, "8090", false), "%q with a list", tc.host)
	}
	assert.False(t, plain.hostAllowed("127.0.0.1:8090", "", false), "no loopback name without the listener's port")
	assert.True(t, plain.hostAllowed("localhost", "80", false), "no port is port 80")
	assert.True(t, plain.hostAllowed("localhost", "443", true), "no port over TLS is port 443")
	assert.False(t, plain.hostAllowed("localhost", "80", true))
}

func TestParseAllowedHost(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		in   string
		want hostRule
		ok   bool
	}{
		{"console.example.com", hostRule{"console.example.com", ""}, true},
		{"Console.Example.COM:8443", hostRule{"console.example.com", "8443"}, true},
		{"10.0.0.5", hostRule{"10.0.0.5", ""}, true},
		{"[fd00::1]:80", hostRule{"fd00::1", "80"}, true},
		{"[fd00::1]", hostRule{"fd00::1", ""}, true},
		{"", hostRule{}, false},
		{"*", hostRule{}, false},
		{"*.example.com", hostRule{}, false},
		{"http://console.example.com", hostRule{}, false},
		{"console.example.com/", hostRule{}, false},
		{"console.example.com.", hostRule{}, false},
		{"a..b", hostRule{}, false},
		{"host:0", hostRule{}, false},
		{"host:65536", hostRule{}, false},
		{"host:08090", hostRule{}, false},
		{"host:", hostRule{}, false},
		{"fd00::1", hostRule{}, false},
		{"[fd00::1]:x", hostRule{}, false},
		{"[10.0.0.5]", hostRule{}, false},
		{"exa mple.com", hostRule{}, false},
		{"ex_ample.com", hostRule{}, false},
	} {
		got, err := parseAllowedHost(tc.in)
		if !tc.ok {
			require.ErrorIs(t, err, ErrAllowedHost, "%q", tc.in)
			continue
		}
		if assert.NoError(t, err, "%q", tc.in) {
			assert.Equal(t, tc.want, got, "%q", tc.in)
		}
	}
	_, err := New(Deps{Names: subjects.MustNames(subjects.DefaultPrefix)}, Config{AllowedHosts: []string{"ok.example", "http://bad"}})
	require.ErrorIs(t, err, ErrAllowedHost)
	require.ErrorContains(t, err, "AllowedHosts")
	require.ErrorContains(t, err, `"http://bad"`)
}
