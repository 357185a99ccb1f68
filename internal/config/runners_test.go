package config

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/subjects"
)

// simRest completes a config whose roles block comes last with `runner:
// sim` for every role it does not name, since a file must name them all.
func simRest(doc string) string {
	for _, r := range subjects.Roles {
		if !strings.Contains(doc, "  "+string(r)+":") {
			doc += "  " + string(r) + ": {runner: sim}\n"
		}
	}
	return doc
}

func TestConfigRunnerSafetyKeys(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, doc, err string }{
		{"secret_env", "roles:\n  planner: {runner: exec, exec: {argv: [x], env: {A: b}, secret_env: [A]}}\n", ""},
		{"bad secret_env", "roles:\n  planner: {runner: exec, exec: {argv: [x], secret_env: [\"A B\"]}}\n", `roles.planner.exec.secret_env[0]: "A B" is not an environment variable name`},
		{"json_mode off", "roles:\n  judge: {runner: openai, openai: {base_url: \"https://h/v1\", model: m, json_mode: off}}\n", ""},
		{"bad json_mode", "roles:\n  judge: {runner: openai, openai: {base_url: \"https://h/v1\", model: m, json_mode: yes}}\n", `roles.judge.openai.json_mode: "yes": want auto, on or off`},
		{"http to loopback", "roles:\n  judge: {runner: openai, openai: {base_url: \"http://127.0.0.1:8000/v1\", model: m}}\n", ""},
		{"http to a remote host", "roles:\n  judge: {runner: openai, openai: {base_url: \"http://u:pw@gpu-box:8000/v1\", model: m}}\n", `roles.judge.openai.base_url: "http://[REDACTED]@gpu-box:8000/v1" is plain http`},
		{"http allowed", "roles:\n  judge: {runner: openai, openai: {base_url: \"http://gpu-box:8000/v1\", model: m, allow_insecure_http: true}}\n", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := Parse([]byte(simRest(tc.doc)))
			if tc.err == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorContains(t, err, tc.err)
			require.NotContains(t, err.Error(), "pw")
		})
	}
}

// network: false on an exec runner cuts its network; absent or true
// shares it.
func TestConfigExecNetwork(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		doc  string
		want bool
	}{
		{"{argv: [x]}", false},
		{"{argv: [x], network: true}", false},
		{"{argv: [x], network: false}", true},
	} {
		f, err := Parse([]byte(simRest("roles:\n  implementer: {runner: exec, exec: " + tc.doc + "}\n")))
		require.NoError(t, err, tc.doc)
		require.Equal(t, tc.want, f.Roles.For(subjects.RoleImplementer).execConfig().NoNetwork, tc.doc)
	}

	f, err := Parse([]byte(simRest("roles:\n  implementer: {runner: exec, exec: {argv: [x], network: false}}\n")))
	require.NoError(t, err)
	none, err := sandbox.New(sandbox.Config{Mode: sandbox.ModeNone})
	require.NoError(t, err)
	_, err = f.SandboxedRunners(none, nil, runner.NewSim(runner.SimOptions{}))
	require.ErrorContains(t, err, "roles.implementer: exec runner for implementer: network: false needs the bubblewrap sandbox")
	box, err := sandbox.New(sandbox.Config{})
	require.NoError(t, err)
	_, err = f.SandboxedRunners(box, nil, runner.NewSim(runner.SimOptions{}))
	require.NoError(t, err)
}

// TestConfigSecrets sets environment variables, so it does not run in
// parallel.
func TestConfigSecrets(t *testing.T) {
	t.Setenv("NATS_PASSWORD", "nats-pw-1")
	t.Setenv("DROVER_TOKEN", "drover-tok-1")
	t.Setenv("DROVER_ZZ_KEY", "openai-key-1")
	t.Setenv("DROVER_ZZ_GH_TOKEN", "inherited-tok-1")
	t.Setenv("DROVER_ZZ_PLAIN", "inherited-plain")
	t.Setenv("NATS_URL", "nats://w:url-pw-1@h:4222")
	f, err := Parse([]byte(`
nats_url: "nats://a:file-pw-1@h:4222"
roles:
  planner: {runner: openai, openai: {base_url: "https://h/v1?api_key=q-key-1", model: m, api_key_env: DROVER_ZZ_KEY}}
  implementer:
    runner: exec
    exec:
      argv: [x]
      env: {MY_API_TOKEN: env-tok-1, LISTED: listed-1, PLAIN: plain-value}
      inherit: [DROVER_ZZ_GH_TOKEN, DROVER_ZZ_PLAIN]
      secret_env: [LISTED]
  judge: {runner: sim}
`))
	require.NoError(t, err)
	got := f.Secrets("flag-pw-1")
	for _, want := range []string{"nats-pw-1", "drover-tok-1", "openai-key-1", "inherited-tok-1", "url-pw-1", "file-pw-1", "q-key-1", "env-tok-1", "listed-1", "flag-pw-1"} {
		require.Contains(t, got, want)
	}
	require.NotContains(t, got, "plain-value")
	require.NotContains(t, got, "inherited-plain")

	// Each is named by its variable or field, for the secret scan's reason.
	names := map[string]string{}
	for _, s := range f.NamedSecrets("flag-pw-1") {
		names[s.Value] = s.Name
	}
	for value, name := range map[string]string{
		"nats-pw-1": "NATS_PASSWORD", "openai-key-1": "DROVER_ZZ_KEY", "inherited-tok-1": "DROVER_ZZ_GH_TOKEN",
		"env-tok-1": "roles.implementer.exec.env.MY_API_TOKEN", "listed-1": "roles.implementer.exec.env.LISTED",
		"file-pw-1": "the credentials in nats_url", "url-pw-1": "the credentials in NATS_URL",
		"q-key-1": "the credentials in roles.planner.openai.base_url", "flag-pw-1": "a connection or repository secret",
	} {
		require.Equal(t, name, names[value], value)
	}
}

func TestConfigRunnersRedact(t *testing.T) {
	t.Parallel()
	const secret = "tok-9f8e7d6c5b4a"
	f, err := Parse([]byte(`
roles:
  implementer:
    runner: exec
    exec:
      argv: [sh, -c, 'echo "{\"change\":\"used $MY_TOKEN\"}"; echo "auth $MY_TOKEN" >&2; exit $FAIL']
      env: {MY_TOKEN: ` + secret + `, FAIL: "1"}
      inherit: [PATH]
  planner: {runner: sim}
  judge: {runner: sim}
`))
	require.NoError(t, err)
	set, err := f.Runners(nil, runner.NewSim(runner.SimOptions{}))
	require.NoError(t, err)
	_, ok := set.Implementer.(runner.LessonReader)
	require.True(t, ok, "the wrapped exec runner still reads lessons")
	require.False(t, runner.RunsInline(set.Implementer), "an exec runner runs in a goroutine of its own under a timeout")
	require.True(t, runner.RunsInline(set.Planner), "the sim, wrapped to redact, still runs inline")
	req := runner.Request{Role: subjects.RoleImplementer, Task: subjects.TaskRequest{ID: "T", Workflow: "w", Scope: "s"}, Attempt: 1}
	_, err = set.Implementer.Run(context.Background(), req)
	require.Error(t, err)
	require.Contains(t, err.Error(), "auth [REDACTED]")
	require.NotContains(t, err.Error(), secret)

	f.Roles.Implementer.Exec.Env["FAIL"] = "0"
	set, err = f.Runners(nil, runner.NewSim(runner.SimOptions{}))
	require.NoError(t, err)
	res, err := set.Implementer.Run(context.Background(), req)
	require.NoError(t, err)
	require.JSONEq(t, `{"change":"used [REDACTED]"}`, string(res.Output))
	require.NoError(t, set.Close())
}
