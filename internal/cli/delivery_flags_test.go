package cli

import (
	"io"
	"log/slog"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/forge"
	"github.com/droverhq/drover/internal/workspace"
)

// The delivery and pull_request keys merge under --delivery and --pr-*
// like every other setting.
func TestDeliveryFlagsOverrideTheFile(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "drover.yaml", `
workspace: {repo: /srv/repo.git, push: true}
delivery: pull_request
pull_request: {forge: github, repo: acme/app, token_env: GH_TOKEN, labels: [drover], base: main}
roles: {planner: {runner: sim}, implementer: {runner: sim}, judge: {runner: sim}}
`)
	var f serveFlags
	cmd := &cobra.Command{}
	addWorkspaceFlags(cmd.Flags(), &f.workspace)
	addDeliveryFlags(cmd.Flags(), &f.delivery)
	require.NoError(t, cmd.Flags().Parse([]string{"--pr-base", "release", "--pr-draft"}))
	f.config, f.data = path, t.TempDir()
	g := &globals{prefix: "drover", log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	_, err := applyConfig(cmd, g, &f)
	require.NoError(t, err)
	require.Equal(t, "pull_request", f.delivery.mode)
	require.Equal(t, forge.Config{Forge: "github", Repo: "acme/app", TokenEnv: "GH_TOKEN", Labels: []string{"drover"}, Base: "release", Draft: true}, f.delivery.pr)

	env := map[string]string{"GH_TOKEN": "tok"}
	c, err := pullRequests(f.delivery, workspaceConfig(f), func(k string) string { return env[k] })
	require.NoError(t, err)
	require.Equal(t, forge.DefaultGitHubAPI, c.Config().APIURL)
}

func TestPullRequestsChecks(t *testing.T) {
	t.Parallel()
	pushing := workspace.Config{Repo: "/srv/repo.git", Push: true, BaseRef: "main"}
	pr := forge.Config{Forge: "gitlab", Repo: "g/app", TokenEnv: "GL_TOKEN"}
	env := func(k string) string { return map[string]string{"GL_TOKEN": "tok"}[k] }
	for _, tc := range []struct {
		name    string
		d       deliveryFlags
		ws      workspace.Config
		getenv  func(string) string
		wantErr string
		client  bool
	}{
		{"branch", deliveryFlags{mode: "branch"}, workspace.Config{}, env, "", false},
		{"merge is not ours", deliveryFlags{mode: "merge"}, pushing, env, "", false},
		{"unknown", deliveryFlags{mode: "mail"}, pushing, env, `--delivery "mail"`, false},
		{"pull request", deliveryFlags{mode: "pull_request", pr: pr}, pushing, env, "", true},
		{"no workspaces", deliveryFlags{mode: "pull_request", pr: pr}, workspace.Config{}, env, "needs workspaces that push", false},
		{"no push", deliveryFlags{mode: "pull_request", pr: pr}, workspace.Config{Repo: "/r", BaseRef: "main"}, env, "needs workspaces that push", false},
		{"no base", deliveryFlags{mode: "pull_request", pr: pr}, workspace.Config{Repo: "/r", Push: true}, env, "pull_request.base: required", false},
		{"no token", deliveryFlags{mode: "pull_request", pr: pr}, pushing, func(string) string { return "" }, "$GL_TOKEN is empty", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := pullRequests(tc.d, tc.ws, tc.getenv)
			if tc.wantErr != "" {
				require.ErrorContains(t, err, tc.wantErr)
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.client, c != nil)
		})
	}
}
