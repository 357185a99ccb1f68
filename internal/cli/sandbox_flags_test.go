package cli

import (
	"bytes"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/status"
)

// --sandbox wins over the file's sandbox: block, which wins over the
// default (bubblewrap); a bad mode stops serve naming the flag; a file
// with an exec role says so to the worker.
func TestSandboxFlagAndFile(t *testing.T) {
	t.Parallel()
	const roles = "roles: {planner: {runner: sim}, implementer: {runner: exec, exec: {argv: [agent]}}, judge: {runner: sim}}\n"
	for _, tc := range []struct {
		name, file string
		args       []string
		none       bool
		err        string
	}{
		{"default", roles, nil, false, ""},
		{"file none", "sandbox: none\n" + roles, nil, true, ""},
		{"flag none", roles, []string{"--sandbox", "none"}, true, ""},
		{"flag beats file", "sandbox: {mode: none}\n" + roles, []string{"--sandbox", "bubblewrap"}, false, ""},
		{"bad flag", roles, []string{"--sandbox", "chroot"}, false, `--sandbox "chroot": want bubblewrap or none`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var f serveFlags
			cmd := &cobra.Command{}
			addSandboxFlags(cmd.Flags(), &f.sandboxMode)
			require.NoError(t, cmd.Flags().Parse(tc.args))
			f.config, f.data = writeFile(t, "drover.yaml", tc.file), t.TempDir()
			g := &globals{prefix: "drover", log: slog.New(slog.NewTextHandler(io.Discard, nil))}
			_, err := applyConfig(cmd, g, &f)
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, f.sandbox)
			require.Equal(t, tc.none, f.sandbox.None())
			require.True(t, f.execRoles)
		})
	}
}

// drover status prints each worker's readiness warnings, escaped.
func TestRenderStatusWarnings(t *testing.T) {
	t.Parallel()
	wk := status.Worker{WorkerStatus: status.WorkerStatus{WorkerID: "w-1", State: "running",
		Warnings: []string{"sandbox: mode none: agents run uncontained", "evil\x1b[2J\nline"}}}
	var out bytes.Buffer
	require.NoError(t, renderStatus(&out, status.Report{At: time.Now(), Prefix: "drover", Workers: []status.Worker{wk}}, false, false))
	require.Contains(t, out.String(), "warning  w-1: sandbox: mode none: agents run uncontained\n")
	require.Contains(t, out.String(), "warning  w-1: evil\\x1b[2J line\n")
}

// drover config check says how a worker would contain the file's agents,
// and says nothing of the sandbox when the file runs none.
func TestConfigCheckSandbox(t *testing.T) {
	t.Parallel()
	const exec = "roles: {planner: {runner: sim}, implementer: {runner: exec, exec: {argv: [agent]}}, judge: {runner: sim}}\n"
	const sim = "roles: {planner: {runner: sim}, implementer: {runner: sim}, judge: {runner: sim}}\n"
	for _, tc := range []struct{ name, file, want string }{
		{"none", "sandbox: none\n" + exec, "\nsandbox: none: agents run uncontained"},
		{"bubblewrap", exec, "\nsandbox: bubblewrap "},
		{"no agents", "sandbox: none\n" + sim, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			code, stdout, errOut := runCLI(t, "config", "check", writeFile(t, "drover.yaml", tc.file))
			require.Equal(t, 0, code, errOut)
			if tc.want == "" {
				require.NotContains(t, stdout, "sandbox:")
			} else {
				require.Contains(t, stdout, tc.want)
			}
		})
	}
}
