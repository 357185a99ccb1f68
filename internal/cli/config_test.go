package cli

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/config"
	"github.com/droverhq/drover/internal/runner"
)

func TestConfigOverridePrecedence(t *testing.T) {
	t.Parallel()
	newFlags := func(args ...string) (*pflag.FlagSet, *int, *[]string) {
		fs := pflag.NewFlagSet("t", pflag.ContinueOnError)
		n := fs.Int("concurrency", 16, "")
		q := fs.StringSlice("queues", []string{"default"}, "")
		require.NoError(t, fs.Parse(args))
		return fs, n, q
	}
	// Flag not set: the file's value wins over the default.
	fs, n, q := newFlags()
	override(fs, "concurrency", n, 4)
	overrideSlice(fs, "queues", q, []string{"a", "b"})
	require.Equal(t, 4, *n)
	require.Equal(t, []string{"a", "b"}, *q)
	// Flag set: it wins over the file.
	fs, n, q = newFlags("--concurrency", "2", "--queues", "c")
	override(fs, "concurrency", n, 4)
	overrideSlice(fs, "queues", q, []string{"a"})
	require.Equal(t, 2, *n)
	require.Equal(t, []string{"c"}, *q)
	// Neither: the default stays; a zero file value means "not set".
	fs, n, q = newFlags()
	override(fs, "concurrency", n, 0)
	overrideSlice(fs, "queues", q, nil)
	require.Equal(t, 16, *n)
	require.Equal(t, []string{"default"}, *q)
}

// TestConfigEnvOverridesFile checks that a DROVER_* variable counts as a set
// flag: applyEnv marks it Changed, so it beats the file. The flag has a
// name of its own so the variable touches no other test.
func TestConfigEnvOverridesFile(t *testing.T) {
	t.Parallel()
	const env = "DROVER_ZZ_CONFIG_TEST_GRACE"
	require.NoError(t, os.Setenv(env, "7s"))
	t.Cleanup(func() { _ = os.Unsetenv(env) })
	cmd := &cobra.Command{}
	grace := cmd.Flags().Duration("zz-config-test-grace", 30*time.Second, "")
	other := cmd.Flags().Duration("zz-config-test-other", 30*time.Second, "")
	require.NoError(t, applyEnv(cmd))
	override(cmd.Flags(), "zz-config-test-grace", grace, time.Minute)
	override(cmd.Flags(), "zz-config-test-other", other, time.Minute)
	require.Equal(t, 7*time.Second, *grace)
	require.Equal(t, time.Minute, *other)
}

func TestConfigApplyToServeFlags(t *testing.T) {
	t.Parallel()
	path := writeFile(t, "drover.yaml", `
prefix: fleet
worker: {concurrency: 8, max_deliver: 3, queues: [a, b], role_timeout: 5m}
roles:
  planner: {runner: sim}
  implementer: {runner: sim}
  judge: {runner: openai, timeout: 1m, openai: {base_url: "http://127.0.0.1:1/v1", model: m}}
`)
	var f serveFlags
	cmd := &cobra.Command{}
	fl := cmd.Flags()
	fl.IntVar(&f.concurrency, "concurrency", 16, "")
	fl.IntVar(&f.maxDeliver, "max-deliver", 5, "")
	fl.StringSliceVar(&f.queues, "queues", []string{"default"}, "")
	fl.DurationVar(&f.grace, "grace", 30*time.Second, "")
	fl.DurationVar(&f.roleTimeout, "role-timeout", 30*time.Minute, "")
	require.NoError(t, fl.Parse([]string{"--concurrency", "2"}))
	f.config = path
	g := &globals{prefix: "drover", log: slog.New(slog.NewTextHandler(io.Discard, nil))}

	set, err := applyConfig(cmd, g, &f)
	require.NoError(t, err)
	require.Equal(t, 2, f.concurrency, "flag beats file")
	require.Equal(t, 3, f.maxDeliver, "file beats default")
	require.Equal(t, []string{"a", "b"}, f.queues)
	require.Equal(t, 30*time.Second, f.grace, "default when neither")
	require.Equal(t, 5*time.Minute, f.roleTimeout)
	require.Equal(t, "fleet", g.names.Prefix())
	require.Equal(t, runner.SimIdentity, set.Planner.Identity())
	require.Contains(t, set.Judge.Identity(), runner.OpenAIIdentityPrefix)
}

func TestConfigCheckCommand(t *testing.T) {
	t.Parallel()
	good := writeFile(t, "good.yaml", `
roles:
  planner: {runner: openai, timeout: 2m, openai: {base_url: "http://127.0.0.1:1/v1", model: "tiny", api_key_env: DROVER_ZZ_NO_KEY}}
  implementer: {runner: exec, exec: {argv: [agent]}}
  judge: {runner: sim}
`)
	code, out, errOut := runCLI(t, "config", "check", good)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, good+": ok")
	require.Regexp(t, `planner\s+openai\s+2m0s\s+defaults/planner.tmpl\s+model "tiny" at http://127.0.0.1:1/v1, key \$DROVER_ZZ_NO_KEY \(unset\)\s+openai/v1:[0-9a-f]{64}`, out)
	require.Regexp(t, `judge\s+sim\s+-\s+defaults/judge.tmpl\s+built-in simulator\s+sim/v1`, out)
	require.Regexp(t, `\nplanner\s+openai\s+cached: openai output is a function of the prompt\n`, out)
	require.Regexp(t, `\nimplementer\s+exec\s+not cached: exec without workspace \(set cache: true if the agent is pure\)\n`, out)
	require.Regexp(t, `\njudge\s+sim\s+cached: sim output is a function of the prompt\n`, out)

	partial := writeFile(t, "partial.yaml", "roles:\n  implementer: {runner: exec, exec: {argv: [agent]}}\n")
	code, _, errOut = runCLI(t, "config", "check", partial)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, partial+": roles.judge and roles.planner are not set; name every role (runner: sim to use the simulator)")

	bad := writeFile(t, "bad.yaml", "roles:\n  judge: {runner: openai, openai: {base_url: 'http://x/v1'}}\n")
	code, _, errOut = runCLI(t, "config", "check", "--config", bad)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, bad+": roles.judge.openai.model: required when runner is openai")

	tmpl := filepath.Dir(writeFile(t, "prompts/judge.tmpl", "Judge {{.Task.Scope}}\n{{.NoSuchField}}\n"))
	code, _, errOut = runCLI(t, "config", "check", good, "--prompts", tmpl)
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "judge.tmpl:2:")
}

func TestConfigExampleCommand(t *testing.T) {
	t.Parallel()
	code, out, _ := runCLI(t, "config", "example")
	require.Equal(t, 0, code)
	require.Equal(t, string(config.Example), out)
}

func TestConfigServeFailsFastOnBadConfig(t *testing.T) {
	t.Parallel()
	bad := writeFile(t, "bad.yaml", "worker:\n  concurrency: 4\n  ack-wait: 1m\n")
	code, _, errOut := runCLI(t, "serve", "--config", bad, "--http", "", "--data", t.TempDir(), "--listen", "127.0.0.1:0")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "line 3: unknown field ack-wait")

	tmpl := filepath.Dir(writeFile(t, "p/planner.tmpl", "{{if .Task}}\n"))
	code, _, errOut = runCLI(t, "serve", "--prompts", tmpl, "--http", "", "--data", t.TempDir(), "--listen", "127.0.0.1:0")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "planner.tmpl:")
}

func runCLI(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := Execute(context.Background(), append([]string{"--log-format", "text", "--log-level", "error"}, args...), &out, &errOut)
	return code, out.String(), errOut.String()
}

func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, []byte(text), 0o600))
	return path
}
