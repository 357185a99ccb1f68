package pipeline

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/runner"
)

func TestScanChange(t *testing.T) {
	t.Parallel()
	const secret = "tok-scan-change-0123"
	p := &Pipeline{d: Deps{Secrets: redact.NewNamed(redact.Secret{Name: "API_TOKEN", Value: secret})}}
	patch := []byte("diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n x\n+" + secret + "\n")
	for _, tc := range []struct {
		name string
		d    WorkspaceDiff
		want string // "" for none
	}{
		{"clean", WorkspaceDiff{Patch: []byte("diff --git a/a b/a\n"), Log: "agent <a@b>\n\nfix it\n"}, ""},
		{"in the patch", WorkspaceDiff{Patch: patch}, "the change holds a configured secret (API_TOKEN, plain) in a.txt"},
		{"in a commit message", WorkspaceDiff{Log: "agent <a@b>\n\nuse " + secret + "\n"}, "the change holds a configured secret (API_TOKEN, plain) in a commit message"},
		{"a log without a secret", WorkspaceDiff{Log: "agent <a@b>\n\nexplain the Drover-Task trailer\n"}, ""},
	} {
		err := p.scanChange(tc.d)
		if tc.want == "" {
			require.NoError(t, err, tc.name)
			continue
		}
		require.ErrorIs(t, err, runner.ErrPermanent, tc.name)
		require.ErrorContains(t, err, tc.want, tc.name)
		require.NotContains(t, err.Error(), secret, tc.name)
	}
	require.NoError(t, (&Pipeline{}).scanChange(WorkspaceDiff{Patch: patch}), "no secrets configured")
}
