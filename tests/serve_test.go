package tests

import (
	"github.com/stretchr/testify/require"
	"os/exec"
	"strings"
	"testing"
)

// Scenario: the release binary (no failpoints tag) has none of serve's
// fault-injection flags: they are neither listed nor accepted.
func TestReleaseBinaryHasNoFailpoints(t *testing.T) {
	t.Parallel()
	bin := plainBinary(t)
	help, err := exec.Command(bin, "serve", "--help").CombinedOutput()
	require.NoError(t, err, "%s", help)
	require.Contains(t, string(help), "--submit", "this is serve's help")
	for _, name := range []string{"--fault-stop-after-commits", "--sim-call-log"} {
		require.NotContains(t, string(help), name)
		// A server that cannot be reached: a release binary stops at
		// the flag before it connects.
		out, err := exec.Command(bin, "serve", "--nats-url", "nats://127.0.0.1:1", "--http", "", name, "1").CombinedOutput()
		require.Error(t, err)
		require.True(t, strings.Contains(string(out), "unknown flag: "+name), "%s", out)
	}
}
