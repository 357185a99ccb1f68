//go:build failpoints

package cli

import (
	"github.com/spf13/pflag"

	"github.com/droverhq/drover/internal/pipeline"
)

// Failpoints reports whether this binary was built with -tags failpoints,
// the build the fault drills run: only it has serve's fault-injection flags.
const Failpoints = true

// addFailpointFlags adds serve's hidden fault-drill flags. A release build
// (without the failpoints tag) has none of them, so neither a flag nor a
// DROVER_* variable can turn them on there.
func addFailpointFlags(fl *pflag.FlagSet, f *serveFlags) {
	fl.StringVar(&f.simCallLog, "sim-call-log", "", "append a JSON line per sim runner call to this file (fault drills)")
	_ = fl.MarkHidden("sim-call-log")
	fl.IntVar(&f.stopAfter, "fault-stop-after-commits", 0, "SIGSTOP this process right after its nth state write (fault drills)")
	_ = fl.MarkHidden("fault-stop-after-commits")
	fl.IntVar(&f.stopAfterDLQ, "fault-stop-after-dlq", 0, "SIGSTOP this process right after its nth DLQ entry, before the terminal event, for good (fault drills kill it)")
	_ = fl.MarkHidden("fault-stop-after-dlq")
}

// setFailpoints sets the pipeline's failpoints from serve's fault-drill
// flags: a SIGSTOP right after the nth state write (commits), before its
// events are published, or right after the nth DLQ entry (dlq), before the
// terminal event; 0 sets none.
func setFailpoints(commits, dlq int) {
	pipeline.SetFailpoints(stopAfterCommits(commits), haltAfter(dlq))
}
