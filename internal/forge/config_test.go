package forge_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/forge"
)

func TestConfigValidate(t *testing.T) {
	t.Parallel()
	ok := func(mod func(*forge.Config)) forge.Config {
		c := forge.Config{Forge: forge.GitHub, Repo: "acme/app", TokenEnv: "GH_TOKEN"}
		mod(&c)
		return c
	}
	for _, tc := range []struct {
		name    string
		cfg     forge.Config
		wantErr string // "" valid
		wantAPI string
	}{
		{"github default API", ok(func(*forge.Config) {}), "", forge.DefaultGitHubAPI},
		{"gitlab default API", ok(func(c *forge.Config) { c.Forge, c.Repo = forge.GitLab, "group/sub/app" }), "", forge.DefaultGitLabAPI},
		{"gitlab numeric project", ok(func(c *forge.Config) { c.Forge, c.Repo = forge.GitLab, "4242" }), "", forge.DefaultGitLabAPI},
		{"gitea needs api_url", ok(func(c *forge.Config) { c.Forge = forge.Gitea }), "pull_request.api_url: required for gitea", ""},
		{"gitea", ok(func(c *forge.Config) { c.Forge, c.APIURL = forge.Gitea, "https://git.example/api/v1/" }), "", "https://git.example/api/v1"},
		{"loopback http", ok(func(c *forge.Config) { c.APIURL = "http://127.0.0.1:3000" }), "", "http://127.0.0.1:3000"},
		{"localhost http", ok(func(c *forge.Config) { c.APIURL = "http://localhost:3000" }), "", "http://localhost:3000"},
		{"plain http elsewhere", ok(func(c *forge.Config) { c.APIURL = "http://git.example/api" }), "pull_request.api_url: http to git.example", ""},
		{"other scheme", ok(func(c *forge.Config) { c.APIURL = "ftp://git.example" }), "https only", ""},
		{"credentials in URL", ok(func(c *forge.Config) { c.APIURL = "https://u:p@git.example" }), "no credentials", ""},
		{"relative URL", ok(func(c *forge.Config) { c.APIURL = "/api" }), "not an absolute URL", ""},
		{"unknown forge", ok(func(c *forge.Config) { c.Forge = "bitbucket" }), `pull_request.forge: "bitbucket" is not one of github, gitea, gitlab`, ""},
		{"no repo", ok(func(c *forge.Config) { c.Repo = "" }), "pull_request.repo: required", ""},
		{"github repo without owner", ok(func(c *forge.Config) { c.Repo = "app" }), "want owner/name", ""},
		{"github repo too deep", ok(func(c *forge.Config) { c.Repo = "a/b/c" }), "want owner/name", ""},
		{"repo with dots", ok(func(c *forge.Config) { c.Repo = "../x" }), "not a repository", ""},
		{"repo with query", ok(func(c *forge.Config) { c.Repo = "a/b?x=1" }), "not a repository", ""},
		{"empty part", ok(func(c *forge.Config) { c.Forge, c.Repo = forge.GitLab, "a//b" }), "empty part", ""},
		{"no token_env", ok(func(c *forge.Config) { c.TokenEnv = "" }), "pull_request.token_env: required", ""},
		{"label with comma", ok(func(c *forge.Config) { c.Labels = []string{"a,b"} }), "pull_request.labels", ""},
		{"empty label", ok(func(c *forge.Config) { c.Labels = []string{""} }), "pull_request.labels", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := tc.cfg
			err := cfg.Validate()
			if tc.wantErr != "" {
				require.ErrorIs(t, err, forge.ErrInvalidConfig)
				assert.Contains(t, err.Error(), tc.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.wantAPI, cfg.APIURL)
		})
	}
}
