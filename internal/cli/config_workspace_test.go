package cli

import (
	"io"
	"log/slog"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/workspace"
)

// drover config check reaches the workspace repository: a reachable one is
// reported, an unreachable one fails the check with its reason; with a
// repository, an exec implementer and judge are cached by default, the
// planner not.
func TestConfigCheckWorkspace(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs git: not run with -short")
	}
	repo := filepath.Join(t.TempDir(), "remote.git")
	out, err := exec.Command("git", "init", "-q", "--bare", repo).CombinedOutput()
	require.NoError(t, err, "%s", out)
	const roles = `
roles:
  planner: {runner: exec, exec: {argv: [agent]}}
  implementer: {runner: exec, exec: {argv: [agent]}}
  judge: {runner: exec, exec: {argv: [agent]}}
`
	good := writeFile(t, "good.yaml", "workspace: {repo: "+repo+"}\n"+roles)
	code, stdout, errOut := runCLI(t, "config", "check", good)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, stdout, "workspace: repository "+repo+" reachable")
	require.Regexp(t, `\nplanner\s+exec\s+not cached: exec planner runs outside the workspace`, stdout)
	require.Regexp(t, `\nimplementer\s+exec\s+cached: exec in a workspace: its change is recorded and replayed on a hit\n`, stdout)
	require.Regexp(t, `\njudge\s+exec\s+cached: exec in a workspace`, stdout)

	gone := filepath.Join(t.TempDir(), "no-such.git")
	bad := writeFile(t, "bad.yaml", "workspace: {repo: "+gone+"}\n"+roles)
	code, _, errOut = runCLI(t, "config", "check", bad)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "unreachable")

	secret := writeFile(t, "secret.yaml", "workspace: {repo: \"http://user:hunter2@127.0.0.1:1/repo.git\"}\n"+roles)
	code, _, errOut = runCLI(t, "config", "check", secret)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "unreachable")
	require.NotContains(t, errOut, "hunter2", "the URL's credentials are masked")

	branch := writeFile(t, "branch.yaml", "workspace: {repo: "+repo+", branch_template: \"a..b/{task}\"}\n"+roles)
	code, _, errOut = runCLI(t, "config", "check", branch)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "workspace.branch_template")
}

// The workspace: block merges under the --workspace-* flags like every
// other setting, setup and cleanup come from the file, and the directory
// defaults to <data>/workspaces only when a repository is named.
func TestWorkspaceFlagsOverrideTheFile(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "drover.yaml", `
workspace:
  repo: /srv/repo.git
  base_ref: main
  push: true
  push_batch: 4
  setup: [{argv: [make, deps], timeout: 1m}]
roles: {planner: {runner: sim}, implementer: {runner: sim}, judge: {runner: sim}}
`)
	var f serveFlags
	cmd := &cobra.Command{}
	addWorkspaceFlags(cmd.Flags(), &f.workspace)
	require.NoError(t, cmd.Flags().Parse([]string{"--workspace-base-ref", "release", "--workspace-push-batch", "2"}))
	f.config, f.data = path, "/var/drover"
	g := &globals{prefix: "drover", log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	_, err := applyConfig(cmd, g, &f)
	require.NoError(t, err)
	c := workspaceConfig(f)
	require.Equal(t, "/srv/repo.git", c.Repo, "file")
	require.Equal(t, "release", c.BaseRef, "flag beats file")
	require.Equal(t, 2, c.PushBatch)
	require.True(t, c.Push)
	require.Equal(t, []string{"make", "deps"}, c.Setup[0].Argv)
	require.Equal(t, filepath.Join("/var/drover", "workspaces"), c.Dir)
	require.Equal(t, workspace.DefaultBranchTemplate, c.BranchTemplate)

	require.False(t, workspaceConfig(serveFlags{data: "/var/drover"}).Enabled(), "no repository: off")
}
