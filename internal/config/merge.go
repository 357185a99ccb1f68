package config

import (
	"fmt"

	"github.com/droverhq/drover/internal/mergequeue"
	"github.com/droverhq/drover/internal/pipeline"
)

// validateMerge checks, for delivery "merge", the merge: block and that
// workspaces are on; Delivery.validate reports the other modes.
func validateMerge(mode string, merge mergequeue.Config, workspaces bool) error {
	if pipeline.DeliveryMode(mode) != pipeline.DeliveryMerge {
		return nil
	}
	if !workspaces {
		return fmt.Errorf("%w: delivery %q: needs workspaces (workspace.repo)", mergequeue.ErrInvalidConfig, mode)
	}
	if err := merge.Validate(); err != nil {
		return err
	}
	if check := merge.Check; len(check.Argv) > 0 {
		return check.Validate("merge.check") // its env: names, as setup's
	}
	return nil
}
