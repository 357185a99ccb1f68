package cli

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/status"
)

// drover status lists the workspace counts of the workers that have
// workspaces, and says nothing of workspaces when none has.
func TestRenderStatusWorkspaces(t *testing.T) {
	plain := status.Worker{WorkerStatus: status.WorkerStatus{WorkerID: "w-plain", State: "running"}}
	ws := status.Worker{WorkerStatus: status.WorkerStatus{WorkerID: "w-git", State: "running",
		Workspaces: &status.WorkspaceCounts{Worktrees: 3, Open: 2, Kept: 1, DiskBytes: 5 << 20, Fetches: 2, Pushes: 1, PushedRefs: 7, PushRetries: 4}}}
	for _, tc := range []struct {
		name    string
		workers []status.Worker
		want    []string
		not     []string
	}{
		{"none", []status.Worker{plain}, nil, []string{"WORKSPACES"}},
		{"one", []status.Worker{plain, ws}, []string{"WORKSPACES  WORKTREES  OPEN  KEPT  DISK     FETCHES  PUSHES  PUSHED BRANCHES  PUSH RETRIES",
			"w-git       3          2     1     5.0 MiB  2        1       7                4"}, []string{"w-plain     3"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			require.NoError(t, renderStatus(&out, status.Report{At: time.Now(), Prefix: "drover", Workers: tc.workers}, false, false))
			for _, s := range tc.want {
				require.Contains(t, out.String(), s)
			}
			for _, s := range tc.not {
				require.NotContains(t, out.String(), s)
			}
		})
	}
}
