package worker

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/sandbox"
)

// Whether a worker may start, given whether it runs agents, whether its
// sandbox is off, and what the sandbox's check found.
func TestSandboxVerdict(t *testing.T) {
	t.Parallel()
	unavailable := fmt.Errorf("%w: bwrap: No permissions to create new namespace", sandbox.ErrUnavailable)
	for _, tc := range []struct {
		name     string
		agents   bool
		none     bool
		checkErr error
		note     string
		refused  []string // what the refusal must say; nil: started
	}{
		{"no agents, bubblewrap missing", false, false, unavailable, "", nil},
		{"no agents, none", false, true, nil, "", nil},
		{"agents, bubblewrap runs", true, false, nil, "", nil},
		{"agents, none", true, true, nil, noteSandboxNone, nil},
		{"agents, bubblewrap missing", true, false, unavailable, "", []string{
			"bubblewrap cannot run here", "No permissions to create new namespace", "Install bubblewrap",
			"securityContext", "sandbox: {mode: none}"}},
		{"agents, check cancelled", true, false, context.DeadlineExceeded, "", []string{"sandbox: check: context deadline exceeded"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			note, err := sandboxVerdict(tc.agents, tc.none, tc.checkErr)
			require.Equal(t, tc.note, note)
			if tc.refused == nil {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			require.ErrorIs(t, err, tc.checkErr, "the check's error is wrapped")
			for _, s := range tc.refused {
				require.Contains(t, err.Error(), s)
			}
		})
	}
}
