package config

import (
	"fmt"

	"github.com/droverhq/drover/internal/forge"
	"github.com/droverhq/drover/internal/pipeline"
)

// Delivery is what becomes of an approved task's branch: the delivery
// mode and, for pull_request, where requests are opened.
type Delivery struct {
	// Delivery is branch (push only: the default), merge (the merge
	// queue) or pull_request (a pull request per branch). "" means branch.
	Delivery pipeline.DeliveryMode `yaml:"delivery"`
	// PullRequest configures delivery pull_request (see forge.Config):
	// forge, api_url, repo, base, draft, token_env, labels.
	PullRequest forge.Config `yaml:"pull_request"`
}

// validate checks the mode and, for pull_request, its block (a copy: the
// defaults are filled where the client is built).
func (d Delivery) validate(v *validator) {
	if d.Delivery != "" && !d.Delivery.Valid() {
		v.errs = append(v.errs, fmt.Errorf("delivery: %q is not one of %s, %s, %s", d.Delivery,
			pipeline.DeliveryBranch, pipeline.DeliveryMerge, pipeline.DeliveryPullRequest))
	}
	if d.Delivery == pipeline.DeliveryPullRequest {
		pr := d.PullRequest
		if err := pr.Validate(); err != nil {
			v.errs = append(v.errs, err)
		}
	}
}
