//go:build !failpoints

package cli

import "github.com/spf13/pflag"

// Failpoints reports whether this binary was built with -tags failpoints,
// the build the fault drills run: only it has serve's fault-injection flags.
const Failpoints = false

// addFailpointFlags adds nothing: a release build has no fault-drill flags,
// and so no DROVER_* variable for them either.
func addFailpointFlags(*pflag.FlagSet, *serveFlags) {}

// stopAfterCommits is never set in a release build.
func stopAfterCommits(int) func() { return nil }

// haltAfter is never set in a release build.
func haltAfter(int) func() { return nil }
