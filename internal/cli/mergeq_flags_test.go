package cli

import (
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/mergequeue"
	"github.com/droverhq/drover/internal/workspace"
)

// The delivery key and merge: block merge under --delivery and the
// --merge-* flags; check.argv comes from the file only.
func TestMergeFlagsOverrideTheFile(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "drover.yaml", `
workspace: {repo: /srv/repo.git}
delivery: merge
merge:
  target: main
  check: {argv: [make, test], timeout: 2m}
  batch: 4
  strategy: rebase
roles: {planner: {runner: sim}, implementer: {runner: sim}, judge: {runner: sim}}
`)
	var f serveFlags
	cmd := &cobra.Command{}
	addMergeFlags(cmd.Flags(), &f.mergeq)
	addDeliveryFlags(cmd.Flags(), &f.delivery)
	require.NoError(t, cmd.Flags().Parse([]string{"--merge-target", "release", "--merge-batch", "2"}))
	f.config, f.data = path, "/var/drover"
	g := &globals{prefix: "drover", log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	_, err := applyConfig(cmd, g, &f)
	require.NoError(t, err)
	require.Equal(t, "merge", f.delivery.mode)
	require.Equal(t, mergequeue.Config{Target: "release", Batch: 2, Strategy: "rebase", LeaseTTL: mergequeue.DefaultLeaseTTL,
		Check: workspace.Command{Argv: []string{"make", "test"}, Timeout: 2 * time.Minute}}, f.mergeq.merge)
}
