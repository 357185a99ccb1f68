//go:build failpoints

package pipeline

import "sync/atomic"

// failpoints are the functions every pipeline of the process calls right
// after a state write, before its outbox is published (afterCommit), and
// right after a DLQ entry is stored, before the terminal event and the
// settling of its message (afterDLQ). Only a build with -tags failpoints
// has them: fault drills and the tests that stop a worker at those points.
var failpoints struct{ afterCommit, afterDLQ atomic.Pointer[func()] }

// SetFailpoints sets the functions called after each state write and
// after each DLQ entry, for every pipeline of the process (nil: none),
// and returns a function that restores the ones before. Tests that set
// them must not run in parallel with other tests that run a worker.
func SetFailpoints(afterCommit, afterDLQ func()) (restore func()) {
	ptr := func(f func()) *func() {
		if f == nil {
			return nil
		}
		return &f
	}
	c := failpoints.afterCommit.Swap(ptr(afterCommit))
	d := failpoints.afterDLQ.Swap(ptr(afterDLQ))
	return func() { failpoints.afterCommit.Store(c); failpoints.afterDLQ.Store(d) }
}

func afterCommit() {
	if f := failpoints.afterCommit.Load(); f != nil {
		(*f)()
	}
}

func afterDLQ() {
	if f := failpoints.afterDLQ.Load(); f != nil {
		(*f)()
	}
}
