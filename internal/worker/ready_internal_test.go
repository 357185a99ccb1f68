package worker

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"
)

// An unreachable repository's readiness reason names it with its
// credentials masked, in the reason and in the error it wraps (logged).
func TestRepositoryDown(t *testing.T) {
	for _, tc := range []struct {
		repo, want string
	}{
		{"/srv/git/app.git", "workspace repository /srv/git/app.git unreachable"},
		{"https://x-access-token:ghs_secret@git.example.com/org/app.git", "workspace repository https://[REDACTED]@git.example.com/org/app.git unreachable"},
		{"ssh://deploy@git.example.com/org/app.git", "workspace repository ssh://[REDACTED]@git.example.com/org/app.git unreachable"},
	} {
		t.Run(tc.repo, func(t *testing.T) {
			inner := errors.New("workspace: repository " + tc.repo + " unreachable: git ls-remote: exit status 128")
			err := repositoryDown(tc.repo, inner)
			public := err.Error()
			if w := errors.Unwrap(err); w != nil {
				require.NotContains(t, w.Error(), "ghs_secret")
				public = public[:len(public)-len(w.Error())-2]
			}
			require.Equal(t, tc.want, public)
			require.NotContains(t, err.Error(), "ghs_secret")
		})
	}
}
