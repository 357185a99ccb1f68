package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func captured(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "agents", name))
	require.NoError(t, err)
	return b
}

// The parsers read the CLIs' real output, captured from Claude Code
// 2.1.332, Codex 0.171.0 and Gemini CLI 0.61.0 run against
// internal/agenttest's fakes.
func TestAgentParsers(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		parse func(context.Context, []byte) (agentReport, error)
		out   []byte
		want  agentReport
	}{
		{"claude stream-json", parseClaude, captured(t, "claude_success.jsonl"), agentReport{
			Found: true, Answer: `{"change":"wrote hello.txt"}`, InputTokens: 600, OutputTokens: 60, HasUsage: true,
			CostUSD: 0.0027, HasCost: true, Model: "claude-sonnet-4-5", Session: "a1b1d6f0-483c-4e77-85e8-e441358663ca", Turns: 3}},
		{"claude json --verbose (an array)", parseClaude, captured(t, "claude_success.json"), agentReport{
			Found: true, Answer: `{"change":"wrote hello.txt"}`, InputTokens: 600, OutputTokens: 60, HasUsage: true,
			CostUSD: 0.0027, HasCost: true, Model: "claude-sonnet-4-5", Session: "1405fe53-ec16-4ea2-9a5a-96fe925f2804", Turns: 3}},
		{"claude json, the result alone", parseClaude, []byte(`{"type":"result","subtype":"success","is_error":false,"result":"done","session_id":"s1",` +
			`"total_cost_usd":0.5,"num_turns":2,"usage":{"input_tokens":10,"cache_creation_input_tokens":100,"cache_read_input_tokens":1000,"output_tokens":7}}`),
			agentReport{Found: true, Answer: "done", InputTokens: 1110, CacheReadTokens: 1000, OutputTokens: 7, HasUsage: true, CostUSD: 0.5, HasCost: true, Session: "s1", Turns: 2}},
		{"claude refused key", parseClaude, captured(t, "claude_auth_error.jsonl"), agentReport{
			Found: true, Answer: "Invalid API key · Fix external API key", Error: "Invalid API key · Fix external API key", Permanent: true,
			HasUsage: true, HasCost: true, Session: "51d83415-a434-4d74-9532-e3118a126ff8", Model: "claude-sonnet-4-5", Turns: 1}},
		{"claude max turns", parseClaude, []byte(`{"type":"result","subtype":"error_max_turns","is_error":true,"session_id":"s","num_turns":9}`),
			agentReport{Found: true, Error: "Claude Code reported error_max_turns", Session: "s", Turns: 9}},
		{"claude errors list", parseClaude, []byte(`{"type":"result","subtype":"error_during_execution","is_error":true,"errors":["a","b"]}`),
			agentReport{Found: true, Error: "a; b"}},
		{"claude no result", parseClaude, []byte("{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\",\"model\":\"m\"}\nnot json\n"),
			agentReport{Session: "s", Model: "m"}},
		{"claude hostile numbers", parseClaude, []byte(`{"type":"result","result":"x","total_cost_usd":-1,"usage":{"input_tokens":1e300,"output_tokens":1}}`),
			agentReport{Found: true, Answer: "x"}},
		{"codex exec --json", parseCodex, captured(t, "codex_success.jsonl"), agentReport{
			Found: true, Answer: `{"change":"done"}`, InputTokens: 400, OutputTokens: 40, HasUsage: true, Session: "01a24dec-9844-7e50-9d41-180732be01ae", Turns: 1}},
		{"codex refused key", parseCodex, captured(t, "codex_auth_error.jsonl"), agentReport{
			Error: "unexpected status 401 Unauthorized: invalid api key, url: http://127.0.0.1:8080/v1/responses", Permanent: true, Session: "01a24dec-ac42-7550-ab59-29dd1ffbff56"}},
		{"codex two turns, cached input", parseCodex, []byte("{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"a\"}}\n" +
			"{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":10,\"cached_input_tokens\":4,\"output_tokens\":1}}\n" +
			"{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"b\"}}\n" +
			"{\"type\":\"turn.completed\",\"usage\":{\"input_tokens\":20,\"cached_input_tokens\":8,\"output_tokens\":2}}\n"),
			agentReport{Found: true, Answer: "b", InputTokens: 30, CacheReadTokens: 12, OutputTokens: 3, HasUsage: true, Turns: 2}},
		{"codex recovered from a reconnect", parseCodex, []byte("{\"type\":\"error\",\"message\":\"Reconnecting... 2/5 (stream disconnected)\"}\n" +
			"{\"type\":\"item.completed\",\"item\":{\"type\":\"agent_message\",\"text\":\"ok\"}}\n{\"type\":\"turn.completed\"}\n"),
			agentReport{Found: true, Answer: "ok", Turns: 1}},
		{"codex gave up reconnecting", parseCodex, []byte("{\"type\":\"turn.started\"}\n{\"type\":\"error\",\"message\":\"Reconnecting... 5/5 (stream disconnected)\"}\n"),
			agentReport{Error: "Reconnecting... 5/5 (stream disconnected)"}},
		{"gemini json", parseGemini, []byte("Loaded cached credentials.\n{\"session_id\":\"g1\",\"response\":\"{\\\"verdict\\\":\\\"approve\\\"}\",\"stats\":{\"models\":{" +
			"\"gemini-2.5-flash\":{\"tokens\":{\"prompt\":10,\"candidates\":2,\"cached\":0,\"thoughts\":1}}," +
			"\"gemini-2.5-pro\":{\"tokens\":{\"prompt\":100,\"candidates\":20,\"cached\":50,\"thoughts\":5}}}}}"),
			agentReport{Found: true, Answer: `{"verdict":"approve"}`, Session: "g1", Model: "gemini-2.5-pro", InputTokens: 110, CacheReadTokens: 50, OutputTokens: 28, HasUsage: true}},
		{"gemini json, captured", parseGemini, captured(t, "gemini_success.json"), agentReport{
			Found: true, Answer: `{"change":"done"}`, Session: "fde613b4-d03b-4e7b-a84e-0a3d934a8244", Model: "gemini-3.1-pro-preview",
			InputTokens: 3505, OutputTokens: 171, HasUsage: true}},
		{"gemini error after a stack trace", parseGemini, []byte("Error when talking to Gemini API\n    at x {\n  status: 401\n}\n{\n  \"session_id\": \"s\",\n  \"error\": {\"type\": \"Error\", \"message\": \"bad key\", \"code\": 401}\n}\n"),
			agentReport{Error: "bad key", Permanent: true, Session: "s"}},
		{"gemini error", parseGemini, []byte(`{"error":{"type":"FatalAuthenticationError","message":"API key not valid","code":401}}`),
			agentReport{Error: "API key not valid", Permanent: true}},
		{"opencode json", parseOpencode, []byte(
			"{\"type\":\"step_start\",\"sessionID\":\"ses_1\",\"part\":{\"type\":\"step-start\"}}\n" +
				"{\"type\":\"text\",\"sessionID\":\"ses_1\",\"part\":{\"type\":\"text\",\"text\":\"looking\"}}\n" +
				"{\"type\":\"tool_use\",\"sessionID\":\"ses_1\",\"part\":{\"tool\":\"bash\"}}\n" +
				"{\"type\":\"step_finish\",\"sessionID\":\"ses_1\",\"part\":{\"type\":\"step-finish\",\"reason\":\"tool-calls\",\"cost\":0.01,\"tokens\":{\"input\":100,\"output\":10,\"reasoning\":0,\"cache\":{\"read\":0,\"write\":0}}}}\n" +
				"{\"type\":\"step_start\",\"sessionID\":\"ses_1\",\"part\":{\"type\":\"step-start\"}}\n" +
				"{\"type\":\"text\",\"sessionID\":\"ses_1\",\"part\":{\"type\":\"text\",\"text\":\"done\"}}\n" +
				"{\"type\":\"step_finish\",\"sessionID\":\"ses_1\",\"part\":{\"type\":\"step-finish\",\"reason\":\"stop\",\"cost\":0.02,\"tokens\":{\"input\":200,\"output\":20,\"reasoning\":5,\"cache\":{\"read\":50,\"write\":0}}}}\n"),
			agentReport{Found: true, Answer: "done", Session: "ses_1", InputTokens: 350, CacheReadTokens: 50, OutputTokens: 35, HasUsage: true, CostUSD: 0.03, HasCost: true, Turns: 2}},
		{"opencode error", parseOpencode, []byte(`{"type":"error","sessionID":"ses_2","error":{"name":"ProviderAuthError","data":{"message":"bad key"}}}`),
			agentReport{Error: "bad key", Session: "ses_2"}},
		{"empty", parseCodex, nil, agentReport{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, err := tc.parse(context.Background(), tc.out)
			require.NoError(t, err)
			require.InDelta(t, tc.want.CostUSD, got.CostUSD, 1e-12)
			got.CostUSD = tc.want.CostUSD
			require.Equal(t, tc.want, got)
		})
	}
}

func TestAgentParsersStopWithContext(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	out := []byte(strings.Repeat("{\"type\":\"turn.started\"}\n", 1000))
	for _, p := range []func(context.Context, []byte) (agentReport, error){parseClaude, parseCodex, parseOpencode} {
		_, err := p(ctx, out)
		require.ErrorIs(t, err, context.Canceled)
	}
}

func TestAgentMessageIsBoundedAndPlain(t *testing.T) {
	t.Parallel()
	msg := agentMessage("\x1b[31mInvalid API key\x1b[0m\r\n" + strings.Repeat("x", 4096) + "\xff")
	require.LessOrEqual(t, len(msg), maxAgentErrorBytes+len("…[truncated]"))
	require.NotContains(t, msg, "\x1b")
	require.NotContains(t, msg, "\n")
	require.True(t, strings.HasPrefix(msg, "[31mInvalid API key"), msg)
}

// FuzzAgentParsers: no output makes a parser panic, and what it reports
// is sane.
func FuzzAgentParsers(f *testing.F) {
	for _, name := range []string{"claude_success.jsonl", "claude_success.json", "claude_auth_error.jsonl", "codex_success.jsonl", "codex_auth_error.jsonl", "gemini_success.json"} {
		f.Add(captured(f, name))
	}
	f.Add([]byte(`{"response":"x","stats":{"models":{"m":{"tokens":{"prompt":1}}}}}`))
	f.Add([]byte(`{"type":"step_finish","part":{"reason":"stop","cost":1,"tokens":{"input":1}}}`))
	f.Fuzz(func(t *testing.T, out []byte) {
		for _, p := range []func(context.Context, []byte) (agentReport, error){parseClaude, parseCodex, parseGemini, parseOpencode} {
			rep, err := p(context.Background(), out)
			require.NoError(t, err)
			require.GreaterOrEqual(t, rep.InputTokens, int64(0))
			require.GreaterOrEqual(t, rep.OutputTokens, int64(0))
			require.True(t, sane(rep.CostUSD) || rep.CostUSD == 0)
			require.LessOrEqual(t, len(rep.Answer), len(out))
		}
	})
}

func TestCodexModel(t *testing.T) {
	t.Parallel()
	home := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(home, ".codex"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".codex", "config.toml"),
		[]byte("# mine\nmodel_provider = \"gw\"\nmodel = \"gpt-5-codex\"  # the default\n[model_providers.gw]\nmodel = \"no\"\n"), 0o600))
	other := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(other, "config.toml"), []byte("[profiles.x]\nmodel = \"no\"\n"), 0o600))
	for _, tc := range []struct {
		argv []string
		env  map[string]string
		want string
	}{
		{[]string{"codex", "exec", "-m", "o3", "-"}, nil, "o3"},
		{[]string{"codex", "exec", "--model=o4-mini"}, nil, "o4-mini"},
		{[]string{"codex", "exec", "-c", `model="gpt-5"`}, nil, "gpt-5"},
		{[]string{"codex", "exec"}, map[string]string{"HOME": home}, "gpt-5-codex"},
		{[]string{"codex", "exec"}, map[string]string{"HOME": home, "CODEX_HOME": other}, ""},
		{[]string{"codex", "exec"}, nil, ""},
	} {
		require.Equal(t, tc.want, codexModel(tc.argv, tc.env), "%v %v", tc.argv, tc.env)
	}
}

func TestAgentResumeArgv(t *testing.T) {
	t.Parallel()
	const id = "0c8f085b-b01e-49fd-aa94-4b7853dde520"
	got, ok, err := AgentResumeArgv(AgentClaudeCode, AgentArgv(AgentClaudeCode), id)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, append(AgentArgv(AgentClaudeCode), "--resume", id), got)
	got, ok, err = AgentResumeArgv(AgentCodex, AgentArgv(AgentCodex), id)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, []string{"codex", "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "resume", id, "-"}, got)
	got, ok, err = AgentResumeArgv(AgentGemini, AgentArgv(AgentGemini), id)
	require.NoError(t, err)
	require.True(t, ok)
	require.Equal(t, append(AgentArgv(AgentGemini), "--resume", id), got)
	for _, tc := range []struct {
		agent string
		argv  []string
	}{
		{AgentOpencode, AgentArgv(AgentOpencode)},
		{AgentGemini, []string{"gemini", "--output-format", "json", "--session-id", "x"}},
		{AgentGemini, []string{"gemini", "-r", "latest"}},
		{AgentCodex, []string{"codex", "exec", "--json"}},
		{AgentClaudeCode, []string{"claude", "-p", "--resume", "x"}},
	} {
		_, ok, err := AgentResumeArgv(tc.agent, tc.argv, id)
		require.NoError(t, err)
		require.False(t, ok, "%s %v", tc.agent, tc.argv)
	}
	for _, bad := range []string{"", "--dangerously-skip", "a b", "a;b", strings.Repeat("a", 129), "ü"} {
		_, _, err := AgentResumeArgv(AgentClaudeCode, AgentArgv(AgentClaudeCode), bad)
		require.Error(t, err, bad)
	}
}
