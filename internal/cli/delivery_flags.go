package cli

import (
	"errors"
	"fmt"

	"github.com/spf13/pflag"

	"github.com/droverhq/drover/internal/config"
	"github.com/droverhq/drover/internal/forge"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/workspace"
)

// deliveryFlags are serve's --delivery and --pr-* flags, merged with the
// file's delivery and pull_request keys.
type deliveryFlags struct {
	mode string
	pr   forge.Config
}

// addDeliveryFlags registers --delivery and one --pr-* flag per key of the
// file's pull_request block; each has its DROVER_* variable.
func addDeliveryFlags(fl *pflag.FlagSet, d *deliveryFlags) {
	fl.StringVar(&d.mode, "delivery", string(pipeline.DeliveryBranch), "what becomes of an approved branch: branch (pushed only), merge (the merge queue) or pull_request (a pull request per branch)")
	fl.StringVar(&d.pr.Forge, "pr-forge", "", "forge of --delivery pull_request: github, gitea (also Forgejo) or gitlab")
	fl.StringVar(&d.pr.APIURL, "pr-api-url", "", "the forge's API URL, https (default: GitHub's or GitLab's public API; required for gitea)")
	fl.StringVar(&d.pr.Repo, "pr-repo", "", "repository pull requests are opened in: owner/name, or a GitLab project's ID or path")
	fl.StringVar(&d.pr.Base, "pr-base", "", "branch pull requests go into (default: --workspace-base-ref)")
	fl.BoolVar(&d.pr.Draft, "pr-draft", false, "open pull requests as drafts")
	fl.StringVar(&d.pr.TokenEnv, "pr-token-env", "", "name of the environment variable holding the forge's token")
	fl.StringSliceVar(&d.pr.Labels, "pr-labels", nil, "labels put on each pull request, comma-separated")
}

// mergeDelivery applies the file's delivery keys under the flags: a flag
// set on the command line or by its variable wins.
func mergeDelivery(fs *pflag.FlagSet, dst *deliveryFlags, file config.Delivery) {
	override(fs, "delivery", &dst.mode, string(file.Delivery))
	override(fs, "pr-forge", &dst.pr.Forge, file.PullRequest.Forge)
	override(fs, "pr-api-url", &dst.pr.APIURL, file.PullRequest.APIURL)
	override(fs, "pr-repo", &dst.pr.Repo, file.PullRequest.Repo)
	override(fs, "pr-base", &dst.pr.Base, file.PullRequest.Base)
	override(fs, "pr-draft", &dst.pr.Draft, file.PullRequest.Draft)
	override(fs, "pr-token-env", &dst.pr.TokenEnv, file.PullRequest.TokenEnv)
	overrideSlice(fs, "pr-labels", &dst.pr.Labels, file.PullRequest.Labels)
}

// errPullRequestNeedsPush is returned for --delivery pull_request without
// workspaces that push.
var errPullRequestNeedsPush = errors.New("--delivery pull_request needs workspaces that push (--workspace-repo, --workspace-push)")

// pullRequests is the forge client of --delivery pull_request, its token
// read from the variable --pr-token-env names; nil for the other modes.
func pullRequests(d deliveryFlags, ws workspace.Config, getenv func(string) string) (*forge.Client, error) {
	mode := pipeline.DeliveryMode(d.mode)
	if !mode.Valid() {
		return nil, fmt.Errorf("--delivery %q: not one of %s, %s, %s", d.mode, pipeline.DeliveryBranch, pipeline.DeliveryMerge, pipeline.DeliveryPullRequest)
	}
	if mode != pipeline.DeliveryPullRequest {
		return nil, nil
	}
	if !ws.Enabled() || !ws.Push {
		return nil, errPullRequestNeedsPush
	}
	if d.pr.Base == "" && ws.BaseRef == "" {
		return nil, fmt.Errorf("%w: pull_request.base: required when workspace.base_ref is empty (--pr-base)", forge.ErrInvalidConfig)
	}
	return forge.New(d.pr, getenv(d.pr.TokenEnv))
}
