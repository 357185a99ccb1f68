//go:build unix

package runner

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/agenttest"
	"github.com/droverhq/drover/subjects"
)

// These tests run the real Claude Code and Codex CLIs (installed by
// .ci/run, see internal/agenttest.CLI) with their preset's argv against
// in-process fakes of the model APIs that script each turn.

const (
	fakeClaudeModel = "claude-sonnet-4-5"
	fakeCodexModel  = "gpt-5-codex"
)

// claudeEnv is what a Claude Code role needs to reach the fake: the
// documented variables, a HOME of its own and no retries.
func claudeEnv(t *testing.T, fake *agenttest.Anthropic) map[string]string {
	return map[string]string{
		"PATH": agenttest.Path(agenttest.CLI(t, "claude")), "HOME": t.TempDir(),
		"ANTHROPIC_BASE_URL": fake.URL, "ANTHROPIC_API_KEY": "sk-ant-test-key", "ANTHROPIC_MODEL": fakeClaudeModel,
		"CLAUDE_CODE_MAX_RETRIES": "0",
	}
}

func codexEnv(t *testing.T, fake *agenttest.Responses) map[string]string {
	return map[string]string{
		"PATH": agenttest.Path(agenttest.CLI(t, "codex")), "HOME": t.TempDir(),
		"CODEX_HOME": agenttest.CodexHome(t, fake.URL+"/v1", fakeCodexModel), "OPENAI_API_KEY": "sk-test-key",
	}
}

// runAgent runs role on preset agent in a worktree dir with env.
func runAgent(t *testing.T, role subjects.Role, agent string, env map[string]string, dir string) (Result, error) {
	t.Helper()
	e, err := NewExec(role, ExecConfig{Agent: agent, Env: env}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	req := simReq(t, role, "")
	req.Workspace = &Workspace{Dir: dir, Branch: "drover/wf-1/T1.1", Base: "0000000000000000000000000000000000000000"}
	if role == subjects.RoleJudge {
		req.Change = json.RawMessage(`{"change":"wrote hello.txt"}`)
	}
	return e.Run(ctx, req)
}

// requireWorked checks the implementer's effects in dir: the file its
// tool call wrote and the file its command wrote after checking it.
func requireWorked(t *testing.T, dir string) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(dir, "hello.txt"))
	require.NoError(t, err, "the agent's write reached the worktree")
	require.Equal(t, "hi\n", string(b))
	b, err = os.ReadFile(filepath.Join(dir, "verified.txt"))
	require.NoError(t, err, "the agent's command ran in the worktree")
	require.Equal(t, "verified\n", string(b))
}

const verifyCmd = "test -f hello.txt && echo verified > verified.txt"

func TestRealClaudeCodeImplements(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fake := agenttest.NewAnthropic(t,
		agenttest.Turn{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(dir, "hello.txt"), "content": "hi\n"}, InputTokens: 1000, OutputTokens: 100},
		agenttest.Turn{Tool: "Bash", Input: map[string]any{"command": verifyCmd, "description": "verify"}, InputTokens: 1200, OutputTokens: 50},
		agenttest.Turn{Text: `Done. {"change":"wrote hello.txt","files":["hello.txt"]}`, InputTokens: 1300, OutputTokens: 20},
	)
	res, err := runAgent(t, subjects.RoleImplementer, AgentClaudeCode, claudeEnv(t, fake), dir)
	require.NoError(t, err)
	requireWorked(t, dir)
	require.JSONEq(t, `{"change":"wrote hello.txt","files":["hello.txt"]}`, string(res.Output))

	in, out := fake.Totals()
	require.Equal(t, map[string]any{"input_tokens": in, "output_tokens": out}, res.Metadata["usage"], "the tokens the API reported")
	// Claude Code prices them itself, at Sonnet's $3 and $15 per million.
	require.InDelta(t, float64(in)*3/1e6+float64(out)*15/1e6, res.Metadata["cost_usd"], 1e-9)
	require.Equal(t, fakeClaudeModel, res.Metadata["model"])
	reqs := fake.Requests()
	require.NotEmpty(t, reqs)
	require.Equal(t, reqs[0].Session, res.Metadata["session_id"], "the session the CLI ran")
	require.Less(t, reqs[0].Messages, reqs[len(reqs)-1].Messages, "each turn sends the conversation so far")
	require.EqualValues(t, 3, res.Metadata["num_turns"])
}

func TestRealClaudeCodeJudges(t *testing.T) {
	t.Parallel()
	for _, verdict := range []string{subjects.VerdictApprove, subjects.VerdictReject} {
		t.Run(verdict, func(t *testing.T) {
			t.Parallel()
			fake := agenttest.NewAnthropic(t, agenttest.Turn{Text: `{"verdict":"` + verdict + `","feedback":"checked"}`, InputTokens: 500, OutputTokens: 10})
			res, err := runAgent(t, subjects.RoleJudge, AgentClaudeCode, claudeEnv(t, fake), t.TempDir())
			require.NoError(t, err)
			require.Equal(t, verdict, res.Action)
			require.Equal(t, "checked", res.Reasoning)
		})
	}
}

func TestRealClaudeCodeRefusedKey(t *testing.T) {
	t.Parallel()
	fake := agenttest.NewAnthropic(t, agenttest.Turn{Status: http.StatusUnauthorized, Text: "invalid x-api-key"})
	_, err := runAgent(t, subjects.RoleImplementer, AgentClaudeCode, claudeEnv(t, fake), t.TempDir())
	require.Error(t, err)
	require.Contains(t, err.Error(), "Invalid API key", "the agent's own message")
	require.ErrorIs(t, err, ErrPermanent, "a refused key is not retried: %v", err)
	require.NotContains(t, err.Error(), "sk-ant-test-key")
}

func TestRealCodexImplements(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fake := agenttest.NewResponses(t,
		agenttest.Turn{Tool: "exec_command", Input: map[string]any{"cmd": `printf 'hi\n' > hello.txt`}, InputTokens: 1000, OutputTokens: 100},
		agenttest.Turn{Tool: "exec_command", Input: map[string]any{"cmd": verifyCmd}, InputTokens: 1200, OutputTokens: 50},
		agenttest.Turn{Text: `{"change":"wrote hello.txt","files":["hello.txt"]}`, InputTokens: 1300, OutputTokens: 20},
	)
	res, err := runAgent(t, subjects.RoleImplementer, AgentCodex, codexEnv(t, fake), dir)
	require.NoError(t, err)
	requireWorked(t, dir)
	require.JSONEq(t, `{"change":"wrote hello.txt","files":["hello.txt"]}`, string(res.Output))

	in, out := fake.Totals()
	require.Equal(t, map[string]any{"input_tokens": in, "output_tokens": out}, res.Metadata["usage"], "the tokens the API reported")
	_, hasCost := res.Metadata["cost_usd"]
	require.False(t, hasCost, "Codex reports no cost: the ledger prices its tokens by model")
	reqs := fake.Requests()
	require.Len(t, reqs, 3)
	require.Equal(t, fakeCodexModel, reqs[0].Model)
	require.Equal(t, fakeCodexModel, res.Metadata["model"], "the model of CODEX_HOME's config.toml, for the ledger's price")
	require.Equal(t, reqs[0].Session, res.Metadata["session_id"], "the thread the CLI ran")
}

func TestRealCodexRefusedKey(t *testing.T) {
	t.Parallel()
	fake := agenttest.NewResponses(t, agenttest.Turn{Status: http.StatusUnauthorized, Text: "Incorrect API key provided"})
	_, err := runAgent(t, subjects.RoleImplementer, AgentCodex, codexEnv(t, fake), t.TempDir())
	require.Error(t, err)
	require.Contains(t, err.Error(), "401 Unauthorized: Incorrect API key provided", "the agent's own message")
	require.ErrorIs(t, err, ErrPermanent, "a refused key is not retried: %v", err)
}

func geminiEnv(t *testing.T, fake *agenttest.Gemini) map[string]string {
	return map[string]string{
		"PATH": agenttest.Path(agenttest.CLI(t, "gemini")), "HOME": agenttest.GeminiHome(t),
		"GEMINI_API_KEY": "gemini-test-key", "GOOGLE_GEMINI_BASE_URL": fake.URL,
	}
}

func TestRealGeminiImplements(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	fake := agenttest.NewGemini(t,
		agenttest.Turn{Tool: "write_file", Input: map[string]any{"file_path": filepath.Join(dir, "hello.txt"), "content": "hi\n"}, InputTokens: 1000, OutputTokens: 100},
		agenttest.Turn{Tool: "run_shell_command", Input: map[string]any{"command": verifyCmd}, InputTokens: 1200, OutputTokens: 50},
		agenttest.Turn{Text: `{"change":"wrote hello.txt","files":["hello.txt"]}`, InputTokens: 1300, OutputTokens: 20},
	)
	res, err := runAgent(t, subjects.RoleImplementer, AgentGemini, geminiEnv(t, fake), dir)
	require.NoError(t, err)
	requireWorked(t, dir)
	require.JSONEq(t, `{"change":"wrote hello.txt","files":["hello.txt"]}`, string(res.Output))
	in, out := fake.Totals()
	require.Equal(t, map[string]any{"input_tokens": in, "output_tokens": out}, res.Metadata["usage"], "the tokens the API reported, its side requests included")
	var main string
	for _, r := range fake.Requests() {
		if r.Turn >= 0 {
			main = r.Model
		}
	}
	require.Equal(t, main, res.Metadata["model"], "the model of the agent's loop")
	require.NotEmpty(t, res.Metadata["session_id"])
}

func TestRealGeminiRefusedKey(t *testing.T) {
	t.Parallel()
	fake := agenttest.NewGemini(t, agenttest.Turn{Status: http.StatusUnauthorized, Text: "API key not valid. Please pass a valid API key."})
	_, err := runAgent(t, subjects.RoleImplementer, AgentGemini, geminiEnv(t, fake), t.TempDir())
	require.Error(t, err)
	require.Contains(t, err.Error(), `: {"error":{"code":401,"message":"API key not valid.`, "the agent's own message")
	require.ErrorIs(t, err, ErrPermanent, "a refused key is not retried: %v", err)
}

// A second run that resumes the first one's session: the CLI sends the
// earlier conversation under the same session ID, and the fake's script
// goes on from it.
func TestRealAgentsResumeTheirSession(t *testing.T) {
	t.Parallel()
	type fake interface{ Requests() []agenttest.Request }
	cases := []struct {
		agent string
		start func(t *testing.T, turns ...agenttest.Turn) (fake, map[string]string)
	}{
		{AgentClaudeCode, func(t *testing.T, turns ...agenttest.Turn) (fake, map[string]string) {
			f := agenttest.NewAnthropic(t, turns...)
			return f, claudeEnv(t, f)
		}},
		{AgentCodex, func(t *testing.T, turns ...agenttest.Turn) (fake, map[string]string) {
			f := agenttest.NewResponses(t, turns...)
			return f, codexEnv(t, f)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.agent, func(t *testing.T) {
			t.Parallel()
			f, env := tc.start(t,
				agenttest.Turn{Text: `{"change":"first attempt"}`, InputTokens: 1000, OutputTokens: 10},
				agenttest.Turn{Text: `{"change":"second attempt"}`, InputTokens: 1100, OutputTokens: 10},
			)
			dir := t.TempDir()
			first, err := runAgent(t, subjects.RoleImplementer, tc.agent, env, dir)
			require.NoError(t, err)
			require.JSONEq(t, `{"change":"first attempt"}`, string(first.Output))
			session, _ := first.Metadata["session_id"].(string)
			require.NotEmpty(t, session)
			cold := len(f.Requests())

			argv, ok, err := AgentResumeArgv(tc.agent, AgentArgv(tc.agent), session)
			require.NoError(t, err)
			require.True(t, ok)
			e, err := NewExec(subjects.RoleImplementer, ExecConfig{Agent: tc.agent, Argv: argv, Env: env}, nil)
			require.NoError(t, err)
			req := simReq(t, subjects.RoleImplementer, "")
			req.Attempt, req.Feedback = 2, "add a test"
			req.Workspace = &Workspace{Dir: dir}
			second, err := e.Run(context.Background(), req)
			require.NoError(t, err)
			require.JSONEq(t, `{"change":"second attempt"}`, string(second.Output), "the script went on from the earlier conversation")
			require.Equal(t, session, second.Metadata["session_id"])
			resumed := f.Requests()[cold]
			require.Equal(t, session, resumed.Session)
			require.Greater(t, resumed.Messages, f.Requests()[0].Messages, "the resumed request carries the earlier conversation")
		})
	}
}
