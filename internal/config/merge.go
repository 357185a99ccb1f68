package config

import (
	"fmt"

	"github.com/droverhq/drover/internal/mergequeue"
)

// Delivery modes of the file's delivery key this file checks.
const (
	deliveryBranch = "branch"
	deliveryMerge  = "merge"
)

// validateMerge checks the delivery key and, for "merge", the merge: block
// and that workspaces are on.
func validateMerge(mode string, merge mergequeue.Config, workspaces bool) error {
	switch mode {
	case "", deliveryBranch, "pull_request":
		return nil // pull_request is checked by Delivery.validate
	case deliveryMerge:
		if !workspaces {
			return fmt.Errorf("%w: delivery %q: needs workspaces (workspace.repo)", mergequeue.ErrInvalidConfig, mode)
		}
		return merge.Validate()
	}
	return nil // an unknown mode is reported by Delivery.validate
}
