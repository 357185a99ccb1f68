package tests

import (
	"context"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// Scenario: `drover serve --submit FILE` (so `make run`) against a server
// whose audit stream is weakened. The worker refuses the stream at
// provisioning; serve must exit non-zero with the error naming the setting,
// not wait forever for a worker that never starts.
func TestServeSubmitExitsWhenWorkerFails(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := b.js.CreateStream(ctx, jetstream.StreamConfig{
		Name:     b.names.AuditStream(),
		Subjects: []string{b.names.AuditWildcard()},
		Storage:  jetstream.FileStorage,
		MaxAge:   time.Hour, // expires events: refused
	})
	require.NoError(t, err)

	p := spawnBin(t, plainBinary(t), "serve", "--nats-url", b.url, "--http", "", "--log-format", "json",
		"--submit", filepath.Join("..", "examples", "board.json"))
	err = p.wait(60 * time.Second)
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit, "serve exits with an error status")
	require.NotEqual(t, 0, exit.ExitCode())
	out := p.stderrText()
	require.Contains(t, out, "max_age", "the error names the setting")
	require.Contains(t, out, "audit stream")
}

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
		require.Contains(t, string(out), "unknown flag: "+name, "%s", out)
	}
}
