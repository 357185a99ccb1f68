package tests

import (
	"testing"
	"time"
)

// within returns the next value from ch, failing the test with what if
// none comes within 30 seconds.
func within[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(30 * time.Second):
		t.Fatal(what)
		panic("unreachable")
	}
}
