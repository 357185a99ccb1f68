//go:build failpoints && !unix

package cli

// stopAfterCommits is a no-op where SIGSTOP does not exist.
func stopAfterCommits(int) func() { return nil }

// haltAfter is a no-op where SIGSTOP does not exist.
func haltAfter(int) func() { return nil }
