//go:build !failpoints

package cli

import "github.com/spf13/pflag"

// Failpoints reports whether this binary was built with -tags failpoints,
// the build the fault drills run: only it has serve's fault-injection flags.
const Failpoints = false

// addFailpointFlags adds nothing: a release build has no fault-drill flags,
// and so no DROVER_* variable for them either.
func addFailpointFlags(*pflag.FlagSet, *serveFlags) {}

// setFailpoints sets nothing: a release build has no failpoints.
func setFailpoints(int, int) {}
