package tests

import (
	"flag"
	"os"
	"testing"

	"go.uber.org/goleak"
)

// TestMain runs the end-to-end tests, which start servers, processes and
// git: with -short (make test-unit) it runs none. It fails the package if
// a test leaves a goroutine behind.
func TestMain(m *testing.M) {
	flag.Parse()
	if testing.Short() {
		os.Exit(0)
	}
	goleak.VerifyTestMain(m)
}
