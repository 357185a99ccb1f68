package worker

import (
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// Each workspace error means one thing to the pipeline: permanent (the
// task fails with role_failed), a cache miss, a refused push, or retried
// (anything else); the workspace error stays in the chain for the audit
// stream.
func TestWorkspaceErrMapping(t *testing.T) {
	t.Parallel()
	type meaning int
	const (
		retried meaning = iota
		permanent
		miss
		refused
	)
	for _, tc := range []struct {
		err  error
		want meaning
	}{
		{workspace.ErrChangeTooLarge, permanent},
		{workspace.ErrBranchExists, permanent},
		{subjects.ErrInvalidBranch, permanent},
		{workspace.ErrPatchDoesNotApply, miss},
		{workspace.ErrPushRejected, refused},
		{workspace.ErrSetupFailed, retried},
		{workspace.ErrWorkspaceBroken, retried},
		{workspace.ErrChangeRefused, permanent},
		{workspace.ErrBranchBusy, retried},
		{errors.New("git fetch: connection refused"), retried},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			t.Parallel()
			err := workspaceErr(fmt.Errorf("open: %w", tc.err))
			require.ErrorIs(t, err, tc.err, "the cause is kept")
			got := retried
			switch {
			case errors.Is(err, runner.ErrPermanent):
				got = permanent
			case errors.Is(err, pipeline.ErrPatchDoesNotApply):
				got = miss
			case errors.Is(err, pipeline.ErrPushRejected):
				got = refused
			}
			require.Equal(t, tc.want, got)
		})
	}
	require.NoError(t, workspaceErr(nil))
}

// A workspace error's text goes to the audit stream: the credentials of
// the repository's URL are masked in it, and its meaning is kept.
func TestWorkspaceErrMasksURLCredentials(t *testing.T) {
	t.Parallel()
	a := &workspaces{red: redact.New(redact.URLSecrets("https://bot:hunter2@git.example/r.git")...)}
	err := a.errOf(fmt.Errorf("git push https://bot:hunter2@git.example/r.git: %w", workspace.ErrPushRejected))
	require.NotContains(t, err.Error(), "hunter2")
	require.ErrorIs(t, err, pipeline.ErrPushRejected)
	require.ErrorIs(t, err, workspace.ErrPushRejected)
	require.NoError(t, a.errOf(nil))
}
