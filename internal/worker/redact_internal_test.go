package worker

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/workspace"
)

// What a merge check prints reaches an agent as feedback and the record:
// the repository's URL credentials and the worker's secrets are masked.
func TestRepoRedactorMasksURLsAndSecrets(t *testing.T) {
	t.Parallel()
	cfg := workspace.Config{Repo: "https://bot:repo-pass@git.invalid/acme/app.git", PushRemote: "https://pusher:push-pass@git.invalid/acme/app.git"}
	out := repoRedactor(cfg, "sk-runner-key").String("repo-pass push-pass sk-runner-key kept")
	require.NotContains(t, out, "repo-pass")
	require.NotContains(t, out, "push-pass")
	require.NotContains(t, out, "sk-runner-key")
	require.Contains(t, out, "kept")
	require.True(t, repoRedactor(workspace.Config{Repo: "/srv/repo.git"}).Empty(), "a local path holds no credential")
}
