package config

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/pipeline"
)

func TestConfigDelivery(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, doc, wantErr string
		want               pipeline.DeliveryMode
	}{
		{"default", "", "", ""},
		{"branch", "delivery: branch\n", "", pipeline.DeliveryBranch},
		{"merge", "workspace: {repo: /srv/repo.git}\ndelivery: merge\nmerge: {target: main}\n", "", pipeline.DeliveryMerge},
		{"merge without workspaces", "delivery: merge\nmerge: {target: main}\n", "needs workspaces", ""},
		{"pull request", "delivery: pull_request\npull_request: {forge: github, repo: acme/app, token_env: GH_TOKEN, draft: true, labels: [drover]}\n", "", pipeline.DeliveryPullRequest},
		{"gitlab project path", "delivery: pull_request\npull_request: {forge: gitlab, repo: group/sub/app, token_env: GL_TOKEN, base: main}\n", "", pipeline.DeliveryPullRequest},
		{"unknown mode", "delivery: email\n", `delivery: "email" is not one of branch, merge, pull_request`, ""},
		{"pull request without its block", "delivery: pull_request\n", "pull_request.forge", ""},
		{"no token variable", "delivery: pull_request\npull_request: {forge: github, repo: acme/app}\n", "pull_request.token_env: required", ""},
		{"plain http", "delivery: pull_request\npull_request: {forge: gitea, api_url: 'http://git.example/api/v1', repo: a/b, token_env: T}\n", "pull_request.api_url", ""},
		{"unknown key", "pull_request: {forge: github, tokenenv: X}\n", "unknown field tokenenv", ""},
		{"a block without the mode is not checked", "pull_request: {forge: nope}\n", "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f, err := Parse([]byte(tc.doc))
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.want, f.Delivery.Delivery)
		})
	}
}

// TestConfigSecretsPullRequestToken sets an environment variable, so it
// does not run in parallel.
func TestConfigSecretsPullRequestToken(t *testing.T) {
	t.Setenv("DROVER_ZZ_FORGE", "forge-tok-1")
	f, err := Parse([]byte("delivery: pull_request\npull_request: {forge: github, repo: a/b, token_env: DROVER_ZZ_FORGE}\n"))
	require.NoError(t, err)
	require.Contains(t, f.Secrets(), "forge-tok-1", "the variable's name holds no KEY or TOKEN: it is a secret because token_env names it")
}
