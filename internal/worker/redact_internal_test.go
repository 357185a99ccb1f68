package worker

import (
	"fmt"
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

// A workspace error may quote a path an agent chose: the worker's secrets
// are masked in it, in their encoded forms too.
func TestWorkspaceErrorsMaskSecrets(t *testing.T) {
	t.Parallel()
	m, err := workspace.New(workspace.Deps{}, workspace.Config{Repo: "/srv/repo.git", Dir: t.TempDir()})
	require.NoError(t, err)
	a := newWorkspaces(m, "sk-runner-key-0123")
	err = a.errOf(fmt.Errorf("%w: vendor/sk-runner-key-0123 and c2stcnVubmVyLWtleS0wMTIz", workspace.ErrChangeTooLarge))
	require.ErrorIs(t, err, workspace.ErrChangeTooLarge)
	require.NotContains(t, err.Error(), "sk-runner-key-0123")
	require.NotContains(t, err.Error(), "c2stcnVubmVyLWtleS0wMTIz")
}
