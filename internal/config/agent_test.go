package config

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

func TestConfigAgentPreset(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, doc, err string }{
		{"agent alone", "roles:\n  implementer: {agent: claude-code}\n", ""},
		{"agent on exec", "roles:\n  implementer: {runner: exec, agent: codex, exec: {env: {CODEX_HOME: /x}}}\n", ""},
		{"agent with own argv", "roles:\n  judge: {runner: exec, agent: gemini, exec: {argv: [gemini, -o, json]}}\n", ""},
		{"unknown agent", "roles:\n  implementer: {agent: aider}\n", `roles.implementer.agent: "aider" is not an agent: want claude-code, codex, gemini, opencode`},
		{"agent on openai", "roles:\n  judge: {runner: openai, agent: codex, openai: {base_url: \"https://h/v1\", model: m}}\n", "roles.judge.agent: set but runner is openai"},
		{"exec without agent or argv", "roles:\n  implementer: {runner: exec, exec: {env: {A: b}}}\n", "roles.implementer.exec.argv: required when runner is exec"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f, err := Parse([]byte(simRest(tc.doc)))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				return
			}
			require.NoError(t, err)
			set, err := f.Runners(nil, runner.NewSim(runner.SimOptions{}))
			require.NoError(t, err)
			require.NoError(t, set.Close())
		})
	}
	f, err := Parse([]byte(simRest("roles:\n  implementer: {agent: claude-code}\n")))
	require.NoError(t, err)
	require.Equal(t, RunnerExec, f.Roles.Implementer.RunnerName())
	require.Equal(t, runner.AgentArgv(runner.AgentClaudeCode), f.Roles.Implementer.ExecArgv())
}

// An agent preset's credentials, inherited without being listed in the
// file, are secrets; so are a proxy URL's. Sets the environment, so not
// parallel.
func TestConfigAgentSecrets(t *testing.T) {
	t.Setenv("ANTHROPIC_AUTH_TOKEN", "gateway-tok-1")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-1")
	t.Setenv("HTTPS_PROXY", "http://u:proxy-pw-1@proxy:3128")
	f, err := Parse([]byte(simRest("roles:\n  implementer: {agent: claude-code}\n")))
	require.NoError(t, err)
	got := f.Secrets()
	for _, want := range []string{"gateway-tok-1", "aws-secret-1", "proxy-pw-1"} {
		require.Contains(t, got, want)
	}
}

// A preset role runs its CLI (here a stand-in printing Claude Code's
// result event) and the result, usage and error come from its output,
// masked.
func TestConfigAgentRuns(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bin := filepath.Join(dir, "claude")
	require.NoError(t, os.WriteFile(bin, []byte("#!/bin/sh\ncat >/dev/null\n"+
		`echo '{"type":"result","subtype":"success","is_error":true,"result":"Invalid key sk-ant-secret-42","session_id":"s"}'`+"\n"), 0o755))
	f, err := Parse([]byte(simRest("roles:\n  implementer:\n    agent: claude-code\n    exec: {env: {ANTHROPIC_API_KEY: sk-ant-secret-42, PATH: " + dir + "}}\n")))
	require.NoError(t, err)
	set, err := f.Runners(nil, runner.NewSim(runner.SimOptions{}))
	require.NoError(t, err)
	defer func() { _ = set.Close() }() // done with its runners
	_, err = set.Implementer.Run(context.Background(), runner.Request{Role: subjects.RoleImplementer,
		Task: subjects.TaskRequest{ID: "T", Workflow: "w", Scope: "s"}, Attempt: 1})
	require.ErrorContains(t, err, "agent reported an error: Invalid key [REDACTED]")
	require.NotContains(t, err.Error(), "sk-ant-secret-42")
}
