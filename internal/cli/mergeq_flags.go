package cli

import (
	"github.com/spf13/pflag"

	"github.com/droverhq/drover/internal/mergequeue"
)

// mergeFlags are serve's --merge-* flags, merged with the file's merge:
// block (merge.check.argv and merge.max_feedback are in the file only).
type mergeFlags struct {
	merge mergequeue.Config
}

// addMergeFlags registers the --merge-* flags.
func addMergeFlags(fl *pflag.FlagSet, d *mergeFlags) {
	fl.StringVar(&d.merge.Target, "merge-target", "", "branch the merge queue merges approved branches into (delivery merge)")
	fl.IntVar(&d.merge.Batch, "merge-batch", mergequeue.DefaultBatch, "most branches merged and pushed together")
	fl.StringVar(&d.merge.Strategy, "merge-strategy", mergequeue.StrategyMerge, `"merge" (a merge commit per branch) or "rebase" (the branch's commits replayed)`)
	fl.DurationVar(&d.merge.Check.Timeout, "merge-check-timeout", 0, "timeout of the merge check command (merge.check.argv in the file; 0: 10m)")
	fl.DurationVar(&d.merge.LeaseTTL, "merge-lease-ttl", mergequeue.DefaultLeaseTTL, "how long a dead merger holds its target before another takes over")
}

// applyMergeFlags applies the file's merge: block under the flags: a flag
// set on the command line or by its variable wins.
func applyMergeFlags(fs *pflag.FlagSet, d *mergeFlags, file mergequeue.Config) {
	override(fs, "merge-target", &d.merge.Target, file.Target)
	override(fs, "merge-batch", &d.merge.Batch, file.Batch)
	override(fs, "merge-strategy", &d.merge.Strategy, file.Strategy)
	override(fs, "merge-check-timeout", &d.merge.Check.Timeout, file.Check.Timeout)
	override(fs, "merge-lease-ttl", &d.merge.LeaseTTL, file.LeaseTTL)
	d.merge.Check.Argv = file.Check.Argv
	d.merge.MaxFeedback = file.MaxFeedback
}
