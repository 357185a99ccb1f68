// Package sandboxtest is test support for the tests that run bubblewrap.
package sandboxtest

import (
	"os"
	"os/exec"
	"testing"
)

// Require skips t when bwrap is not installed, unless CI is set: in CI a
// missing bwrap fails the test. Under -short (make test-unit) it skips.
func Require(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs bwrap: not run with -short")
	}
	if _, err := exec.LookPath("bwrap"); err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("bwrap not found and CI is set: install bubblewrap: %v", err)
		}
		t.Skip("bwrap not found: install bubblewrap to run the sandbox tests (they fail under CI)")
	}
}
