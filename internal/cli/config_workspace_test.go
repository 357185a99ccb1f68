package cli

import (
	"os/exec"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/require"
)

// drover config check reaches the workspace repository: a reachable one is
// reported, an unreachable one fails the check with its reason; with a
// repository, an exec implementer and judge are cached by default, the
// planner not.
func TestConfigCheckWorkspace(t *testing.T) {
	t.Parallel()
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
	require.Regexp(t, regexp.MustCompile(`\nimplementer\s+exec\s+cached: exec in a workspace: its change is recorded and replayed on a hit\n`), stdout)
	require.Regexp(t, `\njudge\s+exec\s+cached: exec in a workspace`, stdout)

	gone := filepath.Join(t.TempDir(), "no-such.git")
	bad := writeFile(t, "bad.yaml", "workspace: {repo: "+gone+"}\n"+roles)
	code, _, errOut = runCLI(t, "config", "check", bad)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "unreachable")

	branch := writeFile(t, "branch.yaml", "workspace: {repo: "+repo+", branch_template: \"a..b/{task}\"}\n"+roles)
	code, _, errOut = runCLI(t, "config", "check", branch)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "workspace.branch_template")
}
