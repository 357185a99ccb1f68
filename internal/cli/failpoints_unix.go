//go:build failpoints && unix

package cli

import (
	"os"
	"sync/atomic"
	"syscall"
)

// stopAfterCommits returns a pipeline hook that stops this process with
// SIGSTOP right after its nth state write, before that write's audit events
// are published. Fault drills use it to freeze a worker at the worst moment;
// n <= 0 disables it.
func stopAfterCommits(n int) func() {
	if n <= 0 {
		return nil
	}
	var count atomic.Int64
	return func() {
		if count.Add(1) == int64(n) {
			_ = syscall.Kill(os.Getpid(), syscall.SIGSTOP)
		}
	}
}
