package tests

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/agenttest"
	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/subjects"
)

// TestAgentsEndToEnd runs `drover serve` with the real Claude Code as
// implementer and the real Codex as judge, each through its preset and
// against a scripted fake of its model API: the implementer writes a file
// and runs a command in its directory, the judge approves, and the cost
// of each role in the record and in `drover cost` is what the fakes
// reported (Claude Code's own price, Codex's tokens at the configured
// model price). The key never reaches the record.
func TestAgentsEndToEnd(t *testing.T) {
	t.Parallel()
	claudeBin, codexBin := agenttest.CLI(t, "claude"), agenttest.CLI(t, "codex")
	b := setup(t)
	const key = "sk-ant-e2e-0123456789"
	impl := agenttest.NewAnthropic(t,
		agenttest.Turn{Tool: "Write", Input: map[string]any{"file_path": "hello.txt", "content": "hi\n"}, InputTokens: 1000, OutputTokens: 100},
		agenttest.Turn{Tool: "Bash", Input: map[string]any{"command": "test -f hello.txt && echo verified-$((6*7))"}, InputTokens: 1200, OutputTokens: 50},
		agenttest.Turn{Text: `{"change":"wrote hello.txt, key ` + key + `","files":["hello.txt"]}`, InputTokens: 1300, OutputTokens: 20},
	)
	judge := agenttest.NewResponses(t,
		agenttest.Turn{Tool: "exec_command", Input: map[string]any{"cmd": "cat hello.txt"}, InputTokens: 800, OutputTokens: 30},
		agenttest.Turn{Text: `{"verdict":"approve","feedback":"hello.txt is there"}`, InputTokens: 900, OutputTokens: 15},
	)
	// drover serve contains the agents: they see the CLIs read-only and,
	// without a workspace, work in a fresh directory of their own, which
	// the test cannot read: the command's output reaches it through the
	// fake model, as the tool's result. Codex writes to its CODEX_HOME, so
	// its configuration (agenttest.CodexHome's) is given on the command
	// line, and it keeps its state in the sandbox's fresh HOME.
	codexArgv, err := json.Marshal([]string{"codex", "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
		"-c", `model="gpt-5-codex"`, "-c", `model_provider="drover-fake"`,
		"-c", fmt.Sprintf(`model_providers.drover-fake={name="drover fake", base_url=%q, env_key="OPENAI_API_KEY", wire_api="responses", request_max_retries=0, stream_max_retries=0}`, judge.URL+"/v1"),
		"-"})
	require.NoError(t, err)
	cfg := fmt.Sprintf(`roles:
  planner: {runner: sim}
  implementer:
    agent: claude-code
    exec:
      env: {PATH: %q, ANTHROPIC_BASE_URL: %q, ANTHROPIC_API_KEY: %q, ANTHROPIC_MODEL: claude-sonnet-4-5, CLAUDE_CODE_MAX_RETRIES: "0"}
  judge:
    agent: codex
    exec:
      argv: %s
      env: {PATH: %q, OPENAI_API_KEY: sk-codex-e2e}
prices:
  models:
    gpt-5-codex: {input: 1.25, output: 10}
sandbox: {read_only: [%q, %q]}
`, agenttest.Path(claudeBin), impl.URL, key, codexArgv, agenttest.Path(codexBin), filepath.Dir(claudeBin), filepath.Dir(codexBin))
	path := filepath.Join(t.TempDir(), "drover.yaml")
	require.NoError(t, os.WriteFile(path, []byte(cfg), 0o600))
	b.startProc("--config", path)

	after := b.submit(task("agents", "T1"))
	end := b.waitTerminal("agents", after, 1)["T1"]
	require.Equal(t, subjects.EventTaskCompleted, end.EventType, "%s %s", end.Action, end.Error)
	ran := false // the Bash turn's result, in the request the last turn answered
	for _, r := range impl.Requests() {
		ran = ran || r.Turn == 2 && strings.Contains(string(r.Body), "verified-42") // the output, not the command
	}
	require.True(t, ran, "the implementer wrote hello.txt and its command ran")

	implIn, implOut := impl.Totals()
	judgeIn, judgeOut := judge.Totals()
	costs := map[subjects.Role]ledger.Cost{}
	for _, ev := range b.events("agents") {
		require.NotContains(t, string(ev.Output)+string(ev.Metadata)+ev.Error, key, "the key never reaches the record")
		if c, ok := ledger.FromMetadata(ev.Metadata); ok && ev.Actor != subjects.ActorSystem {
			costs[subjects.Role(ev.Actor)] = c
		}
	}
	ic, jc := costs[subjects.RoleImplementer], costs[subjects.RoleJudge]
	require.Equal(t, ledger.PricedReported, ic.Priced, "Claude Code reports its cost")
	require.Equal(t, [2]int64{implIn, implOut}, [2]int64{ic.InputTokens, ic.OutputTokens})
	require.InDelta(t, float64(implIn)*3/1e6+float64(implOut)*15/1e6, ic.USD, 1e-9)
	require.Equal(t, ledger.PricedTokens, jc.Priced, "Codex's tokens at the configured price")
	require.Equal(t, [2]int64{judgeIn, judgeOut}, [2]int64{jc.InputTokens, jc.OutputTokens})
	require.InDelta(t, float64(judgeIn)*1.25/1e6+float64(judgeOut)*10/1e6, jc.USD, 1e-9)

	code, out, errOut := b.drover("cost", "--workflow", "agents", "--by", "role", "--json")
	require.Zero(t, code, errOut)
	var rep struct {
		Total ledger.Totals `json:"total"`
	}
	require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
	require.Equal(t, implIn+judgeIn, rep.Total.InputTokens, out)
	require.Equal(t, implOut+judgeOut, rep.Total.OutputTokens, out)
	require.InDelta(t, ic.USD+jc.USD, rep.Total.USD, 1e-9, out)
	t.Logf("drover cost: %s", out)
}
