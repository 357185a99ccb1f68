//go:build !failpoints

package pipeline

// afterCommit and afterDLQ are the failpoints of a build with -tags
// failpoints (failpoints.go); a release build has none.
func afterCommit() {}
func afterDLQ()    {}
