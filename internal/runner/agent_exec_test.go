//go:build unix

package runner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/subjects"
)

// agentExec is an exec runner with preset agent whose argv is the
// stand-in testdata/exec/agent.sh, configured by env.
func agentExec(t *testing.T, role subjects.Role, agent string, env map[string]string) *Exec {
	t.Helper()
	return newExec(t, role, ExecConfig{Agent: agent, Argv: []string{script(t, "agent.sh")}, Env: env})
}

func TestAgentPresetResult(t *testing.T) {
	t.Parallel()
	stdin := filepath.Join(t.TempDir(), "stdin")
	out, err := filepath.Abs(filepath.Join("testdata", "agents", "claude_success.jsonl"))
	require.NoError(t, err)
	e := agentExec(t, subjects.RoleImplementer, AgentClaudeCode, map[string]string{"AGENT_OUT": out, "AGENT_STDIN": stdin})
	req := simReq(t, subjects.RoleImplementer, "")
	res, err := e.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, ActionChange, res.Action)
	require.JSONEq(t, `{"change":"wrote hello.txt"}`, string(res.Output), "the answer is the agent's final message, read as JSON")
	require.Equal(t, map[string]any{"input_tokens": int64(600), "output_tokens": int64(60)}, res.Metadata["usage"])
	require.InDelta(t, 0.0027, res.Metadata["cost_usd"], 1e-12)
	require.Equal(t, "claude-sonnet-4-5", res.Metadata["model"])
	require.Equal(t, "a1b1d6f0-483c-4e77-85e8-e441358663ca", res.Metadata["session_id"])
	require.Equal(t, AgentClaudeCode, res.Metadata["agent"])

	got, err := os.ReadFile(stdin)
	require.NoError(t, err)
	want, err := prompt.Defaults().Render(subjects.RoleImplementer, promptData(req))
	require.NoError(t, err)
	require.Equal(t, want, string(got), "the agent reads the rendered prompt on stdin")
}

func TestAgentPresetJudgeAndText(t *testing.T) {
	t.Parallel()
	res, err := agentExec(t, subjects.RoleJudge, AgentClaudeCode, map[string]string{
		"AGENT_TEXT": `{"type":"result","subtype":"success","is_error":false,"result":"Looks right.\n{\"verdict\":\"reject\",\"feedback\":\"add a test\"}"}`,
	}).Run(context.Background(), simReq(t, subjects.RoleJudge, ""))
	require.NoError(t, err)
	require.Equal(t, subjects.VerdictReject, res.Action)
	require.Equal(t, "add a test", res.Reasoning)

	res, err = agentExec(t, subjects.RoleImplementer, AgentCodex, map[string]string{
		"AGENT_TEXT": `{"type":"item.completed","item":{"type":"agent_message","text":"I added the logger."}}` + "\n" + `{"type":"turn.completed","usage":{"input_tokens":5,"output_tokens":1}}`,
	}).Run(context.Background(), simReq(t, subjects.RoleImplementer, ""))
	require.NoError(t, err)
	require.JSONEq(t, `{"change":"I added the logger."}`, string(res.Output), "a text answer is the change")
	_, hasCost := res.Metadata["cost_usd"]
	require.False(t, hasCost, "codex reports no cost")
}

func TestAgentPresetErrors(t *testing.T) {
	t.Parallel()
	abs := func(name string) string {
		p, err := filepath.Abs(filepath.Join("testdata", "agents", name))
		require.NoError(t, err)
		return p
	}
	cases := []struct {
		name      string
		agent     string
		env       map[string]string
		want      string
		permanent bool
	}{
		{"claude refused key, exit 0", AgentClaudeCode, map[string]string{"AGENT_OUT": abs("claude_auth_error.jsonl")},
			"agent reported an error: Invalid API key · Fix external API key", true},
		{"claude refused key, exit 1", AgentClaudeCode, map[string]string{"AGENT_OUT": abs("claude_auth_error.jsonl"), "AGENT_EXIT": "1"},
			"exit status 1: Invalid API key · Fix external API key", true},
		{"codex refused key", AgentCodex, map[string]string{"AGENT_OUT": abs("codex_auth_error.jsonl"), "AGENT_EXIT": "1"},
			"exit status 1: unexpected status 401 Unauthorized: invalid api key, url: http://127.0.0.1:8080/v1/responses", true},
		{"plain text printed on a failure", AgentClaudeCode, map[string]string{"AGENT_TEXT": "Invalid API key \x1b[2J· Fix external API key", "AGENT_EXIT": "1"},
			"agent.sh: exit status 1: Invalid API key  [2J· Fix external API key", false},
		{"no final result", AgentCodex, map[string]string{"AGENT_TEXT": `{"type":"turn.started"}`},
			"agent.sh: codex output has no final result", false},
		{"answer without a verdict", AgentClaudeCode, map[string]string{"AGENT_TEXT": `{"type":"result","result":"fine by me"}`},
			"agent.sh: claude-code's answer: judge: output has no", false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			role := subjects.RoleImplementer
			if tc.name == "answer without a verdict" {
				role = subjects.RoleJudge
			}
			_, err := agentExec(t, role, tc.agent, tc.env).Run(context.Background(), simReq(t, role, ""))
			require.Error(t, err)
			require.Contains(t, err.Error(), tc.want)
			require.Equal(t, tc.permanent, errors.Is(err, ErrPermanent), err.Error())
		})
	}
}

func TestAgentPresetConfig(t *testing.T) {
	t.Parallel()
	e, err := NewExec(subjects.RoleImplementer, ExecConfig{Agent: AgentClaudeCode, Env: map[string]string{"ANTHROPIC_MODEL": "m"}}, nil)
	require.NoError(t, err)
	require.Equal(t, AgentArgv(AgentClaudeCode), e.cfg.Argv)
	require.Contains(t, e.cfg.Argv, "bypassPermissions")
	require.Equal(t, "1", e.cfg.Env["IS_SANDBOX"], "bypassPermissions as root needs it")
	require.Equal(t, "m", e.cfg.Env["ANTHROPIC_MODEL"])
	for _, v := range []string{"PATH", "HOME", "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX", "HTTPS_PROXY"} {
		require.Contains(t, e.cfg.Inherit, v)
	}
	require.Equal(t, NoPromptEnv, e.cfg.PromptEnv, "the prompt goes on stdin, not into every tool call's environment")
	require.Equal(t, maxAgentOutputBytes, e.cfg.MaxOutputBytes)

	own, err := NewExec(subjects.RoleImplementer, ExecConfig{Agent: AgentCodex, Argv: []string{"codex", "exec", "--json", "-"}, Inherit: []string{"PATH"}}, nil)
	require.NoError(t, err)
	require.Equal(t, []string{"codex", "exec", "--json", "-"}, own.cfg.Argv, "argv overrides the preset's")
	require.Equal(t, []string{"PATH"}, own.cfg.Inherit)
	require.NotEqual(t, e.Identity(), own.Identity())

	plain, err := NewExec(subjects.RoleImplementer, ExecConfig{Argv: AgentArgv(AgentCodex)}, nil)
	require.NoError(t, err)
	preset, err := NewExec(subjects.RoleImplementer, ExecConfig{Agent: AgentCodex}, nil)
	require.NoError(t, err)
	require.NotEqual(t, plain.Identity(), preset.Identity(), "the preset is in the identity")

	_, err = NewExec(subjects.RoleImplementer, ExecConfig{Agent: "aider"}, nil)
	require.ErrorContains(t, err, `agent: "aider" is not an agent: want claude-code, codex, gemini, opencode`)
}
