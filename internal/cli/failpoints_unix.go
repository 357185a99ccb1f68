//go:build failpoints && unix

package cli

import (
	"os"
	"sync/atomic"
	"syscall"
)

// stopAfterCommits returns a pipeline hook that stops this process with
// SIGSTOP on its nth call: right after its nth state write, before that
// write's audit events are published (AfterCommit), or right after its nth
// DLQ entry, before the terminal event and the Term (AfterDLQ). Fault
// drills use it to freeze a worker at the worst moment; n <= 0 disables it.
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

// haltAfter is stopAfterCommits for drills that kill the stopped process:
// after the SIGSTOP the calling goroutine never returns, so nothing it
// would do next can slip out while the stop takes hold of every thread.
func haltAfter(n int) func() {
	stop := stopAfterCommits(n)
	if stop == nil {
		return nil
	}
	var count atomic.Int64
	return func() {
		stop()
		if count.Add(1) == int64(n) {
			select {} // until SIGKILL
		}
	}
}
