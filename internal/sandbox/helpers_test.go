package sandbox

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// secretName is a variable of the test process that no contained
// process may read.
const secretName = "DROVER_SANDBOX_TEST_SECRET"

func TestMain(m *testing.M) {
	if err := os.Setenv(secretName, "s3cret-value"); err != nil {
		panic(err)
	}
	goleak.VerifyTestMain(m)
}

// tempDir is a temporary directory without symbolic links in its path.
func tempDir(t testing.TB) string {
	t.Helper()
	d, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	return d
}

// testTimeout bounds every contained process of the tests.
const testTimeout = 30 * time.Second

// secretHolder starts a process whose environment holds the secret, as
// the worker's does (the test's own /proc environ shows only what it
// started with), and returns its PID; it is killed at cleanup.
func secretHolder(t testing.TB) int {
	t.Helper()
	cmd := exec.Command("sleep", "300")
	cmd.Env = []string{secretName + "=s3cret-value"}
	require.NoError(t, cmd.Start())
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd.Process.Pid
}
