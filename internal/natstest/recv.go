package natstest

import (
	"testing"
	"time"
)

// Recv receives one value from ch, or fails the test when none comes
// within timeout: every wait of a test is bounded. A closed channel gives
// the zero value, as a plain receive does.
func Recv[T any](t testing.TB, ch <-chan T, timeout time.Duration) T {
	t.Helper()
	timer := time.NewTimer(timeout)
	defer timer.Stop()
	select {
	case v := <-ch:
		return v
	case <-timer.C:
		t.Fatalf("nothing received within %s", timeout)
		var zero T
		return zero
	}
}
