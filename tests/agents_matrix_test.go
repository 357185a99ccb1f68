//go:build linux

package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/agenttest"
	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// modelFake is what the tests read of a fake of a model API.
type modelFake interface {
	Requests() []agenttest.Request
	Meter()
	On(marker string, script ...agenttest.Turn)
}

// matrixAgent is one real agent CLI, as the matrix runs it.
type matrixAgent struct {
	name, bin string
	// fake starts a fake of the agent's model API: it and its URL.
	fake func(t *testing.T, script ...agenttest.Turn) (modelFake, string)
	// write and shell are its tools' calls.
	write func(path, content string) agenttest.Turn
	shell func(cmd string) agenttest.Turn
	// role is a role's exec argv (nil: the preset's) and env, against a
	// fake at url with key, and the directories the sandbox must show it.
	role func(t *testing.T, url, key string) (argv []string, env map[string]string, readOnly []string)
	// prices is the price of a million fresh input, cached input and
	// output tokens: the CLI's own (Claude Code), else the model's in
	// the configuration below.
	prices [3]float64
	// resumed is how attempt 2 uses attempt 1's session (runner.Session*),
	// reason why it does not resume it.
	resumed, reason string
	// historyOnly: its API's requests do not name the session; a resumed
	// one shows it by the earlier conversation it carries.
	historyOnly bool
	// refusal is the API's message when it refuses the key, refused the
	// agent's own message then.
	refusal, refused string
}

const (
	matrixModelCodex  = "gpt-5-codex"
	matrixModelGemini = "gemini-2.5-flash"
)

var matrixAgents = []matrixAgent{{
	name: runner.AgentClaudeCode, bin: "claude",
	fake: func(t *testing.T, s ...agenttest.Turn) (modelFake, string) {
		f := agenttest.NewAnthropic(t, s...)
		return f, f.URL
	},
	write: func(p, c string) agenttest.Turn {
		return agenttest.Turn{Tool: "Write", Input: map[string]any{"file_path": p, "content": c}}
	},
	shell: func(c string) agenttest.Turn {
		return agenttest.Turn{Tool: "Bash", Input: map[string]any{"command": c, "description": "run"}}
	},
	role: func(_ *testing.T, url, key string) ([]string, map[string]string, []string) {
		return nil, map[string]string{"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": key,
			"ANTHROPIC_MODEL": "claude-sonnet-4-5", "CLAUDE_CODE_MAX_RETRIES": "0"}, nil
	},
	prices: [3]float64{3, 0.3, 15}, resumed: runner.SessionResumed,
	refusal: "invalid x-api-key", refused: "Invalid API key",
}, {
	name: runner.AgentCodex, bin: "codex",
	fake: func(t *testing.T, s ...agenttest.Turn) (modelFake, string) {
		f := agenttest.NewResponses(t, s...)
		return f, f.URL
	},
	write: func(p, c string) agenttest.Turn {
		return agenttest.Turn{Tool: "exec_command", Input: map[string]any{"cmd": fmt.Sprintf("printf %q > %s", c, p)}}
	},
	shell: func(c string) agenttest.Turn {
		return agenttest.Turn{Tool: "exec_command", Input: map[string]any{"cmd": c}}
	},
	// The provider is given as -c options: CODEX_HOME stays in the
	// task's private HOME, where Drover keeps the session.
	role: func(_ *testing.T, url, key string) ([]string, map[string]string, []string) {
		preset := runner.AgentArgv(runner.AgentCodex)
		return slices.Concat(preset[:len(preset)-1], agenttest.CodexConfig(url+"/v1", matrixModelCodex), []string{"-"}),
			map[string]string{"OPENAI_API_KEY": key}, nil
	},
	prices: [3]float64{1.25, 1.25, 10}, resumed: runner.SessionResumed,
	refusal: "Incorrect API key provided", refused: "401 Unauthorized: Incorrect API key provided",
}, {
	name: runner.AgentGemini, bin: "gemini",
	fake: func(t *testing.T, s ...agenttest.Turn) (modelFake, string) {
		f := agenttest.NewGemini(t, s...)
		return f, f.URL
	},
	write: func(p, c string) agenttest.Turn {
		return agenttest.Turn{Tool: "write_file", Input: map[string]any{"file_path": p, "content": c}}
	},
	shell: func(c string) agenttest.Turn {
		return agenttest.Turn{Tool: "run_shell_command", Input: map[string]any{"command": c}}
	},
	// The sandbox's HOME is fresh: the settings that select the key
	// (agenttest.GeminiHome's) are the system's, shown read-only.
	role: func(t *testing.T, url, key string) ([]string, map[string]string, []string) {
		settings := filepath.Join(agenttest.GeminiHome(t), ".gemini")
		return nil, map[string]string{"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": key, "GEMINI_MODEL": matrixModelGemini,
			"GEMINI_CLI_SYSTEM_SETTINGS_PATH": filepath.Join(settings, "settings.json")}, []string{settings}
	},
	// Its requests name no session: each carries the whole conversation.
	prices: [3]float64{0.3, 0.3, 2.5}, resumed: runner.SessionResumed, historyOnly: true,
	refusal: "API key not valid. Please pass a valid API key.", refused: `{"error":{"code":401,"message":"API key not valid.`,
}}

// matrixKey is the model key every role gets; the fakes echo it in their
// errors.
const matrixKey = "sk-matrix-0123456789abcdef0123"

// TestAgentsMatrix runs `drover serve` (workspaces, the bubblewrap
// sandbox) with each real agent CLI as implementer and judge, each
// against a loopback fake of its model API:
//   - session: attempt 1 writes hello.txt and runs a command that writes
//     verified.txt, both in the recorded change; the judge rejects;
//     attempt 2 resumes the session (the fake sees the earlier
//     conversation in the same session, with fewer fresh input tokens
//     than the cold start), adds a test and runs it; the judge approves;
//   - refused: the API refuses the key; the task fails and its record
//     carries the agent's own message, the key masked;
//   - budget: the implementer's usage exceeds the task's budget; the task
//     fails budget_exceeded and the judge never runs.
//
// In each, `drover cost` is what the fakes reported.
func TestAgentsMatrix(t *testing.T) {
	t.Parallel()
	for _, ag := range matrixAgents {
		t.Run(ag.name, func(t *testing.T) {
			t.Parallel()
			t.Run("session", func(t *testing.T) { t.Parallel(); matrixSession(t, ag) })
			t.Run("refused", func(t *testing.T) { t.Parallel(); matrixRefused(t, ag) })
			t.Run("budget", func(t *testing.T) { t.Parallel(); matrixBudget(t, ag) })
		})
	}
}

// matrixRig is an agentRig with ag as implementer and judge, each with a
// fake of its own.
type matrixRig struct {
	*agentRig
	impl, judge modelFake
}

func startMatrixRig(t *testing.T, ag matrixAgent, impl, judge []agenttest.Turn, metered bool) *matrixRig {
	t.Helper()
	path := agenttest.Path(agenttest.CLI(t, ag.bin))
	r := &matrixRig{}
	var implURL, judgeURL string
	r.impl, implURL = ag.fake(t, impl...)
	r.judge, judgeURL = ag.fake(t, judge...)
	if metered {
		r.impl.Meter()
	}
	var readOnly []string
	role := func(name, url string) string {
		argv, env, ro := ag.role(t, url, matrixKey)
		readOnly = append(readOnly, ro...)
		env["PATH"] = path
		exec := map[string]any{"env": env}
		if argv != nil {
			exec["argv"] = argv
		}
		e, err := json.Marshal(exec)
		require.NoError(t, err)
		return fmt.Sprintf("  %s: {agent: %s, exec: %s}\n", name, ag.name, e)
	}
	roles := role("implementer", implURL) + role("judge", judgeURL) +
		fmt.Sprintf("prices: {models: {%s: {input: 1.25, output: 10}, %s: {input: 0.3, output: 2.5}}}",
			matrixModelCodex, matrixModelGemini)
	r.agentRig = startAgentRig(t, roles, readOnly...)
	return r
}

// requireCost checks `drover cost` of wf against what the fakes reported,
// at ag's prices.
func (r *matrixRig) requireCost(ag matrixAgent, wf string) {
	r.t.Helper()
	var in, out int64
	var usd float64
	for _, q := range append(r.impl.Requests(), r.judge.Requests()...) {
		in, out = in+q.InputTokens+q.CacheReadTokens, out+q.OutputTokens
		usd += (float64(q.InputTokens)*ag.prices[0] + float64(q.CacheReadTokens)*ag.prices[1] + float64(q.OutputTokens)*ag.prices[2]) / 1e6
	}
	code, o, errOut := r.drover("cost", "--workflow", wf, "--json")
	require.Zero(r.t, code, errOut)
	var rep struct {
		Total ledger.Totals `json:"total"`
	}
	require.NoError(r.t, json.Unmarshal([]byte(o), &rep), o)
	require.Equal(r.t, in, rep.Total.InputTokens, o)
	require.Equal(r.t, out, rep.Total.OutputTokens, o)
	require.InDelta(r.t, usd, rep.Total.USD, 1e-9, o)
	r.t.Logf("drover cost: %d input, %d output tokens, $%.6f", in, out, usd)
}

// loop is a fake's requests of the agent's loop.
func loop(f modelFake) []agenttest.Request {
	var out []agenttest.Request
	for _, q := range f.Requests() {
		if q.Turn >= 0 {
			out = append(out, q)
		}
	}
	return out
}

func matrixSession(t *testing.T, ag matrixAgent) {
	text := func(s string) agenttest.Turn { return agenttest.Turn{Text: s, InputTokens: 1300, OutputTokens: 20} }
	tokens := func(tn agenttest.Turn, in, out int64) agenttest.Turn {
		tn.InputTokens, tn.OutputTokens = in, out
		return tn
	}
	second := []agenttest.Turn{ // attempt 2, resumed: turns 3 and 4
		tokens(ag.shell(`printf 'grep -qx hi hello.txt\n' > hello_test.sh && sh hello_test.sh && echo pass > test.out`), 1400, 60),
		text(`{"change":"added hello_test.sh","files":["hello_test.sh","test.out"],"notes":"sh hello_test.sh: pass"}`),
	}
	impl := []agenttest.Turn{
		tokens(ag.write("hello.txt", "hi\n"), 1000, 100),
		tokens(ag.shell("test -f hello.txt && echo verified > verified.txt"), 1200, 50),
		text(`{"change":"wrote hello.txt","files":["hello.txt","verified.txt"]}`),
	}
	judge := []agenttest.Turn{text(`{"verdict":"reject","feedback":"add a test that checks hello.txt"}`)}
	r := startMatrixRig(t, ag, append(impl, second...), judge, ag.resumed == runner.SessionResumed)
	r.judge.On("attempt 2 of", text(`{"verdict":"approve","feedback":"hello.txt and its test are there"}`))
	if ag.resumed != runner.SessionResumed {
		r.impl.On("attempt 2 of", second...) // a fresh session: its script from its start
	}

	after := r.submit(task("matrix", "T1"))
	end := r.waitTerminal("matrix", after, 1)["T1"]
	require.Equal(t, subjects.EventTaskCompleted, end.EventType, "%s %s", end.Action, end.Error)
	verdicts := map[int][2]string{}
	files := map[int][]string{}
	for _, ev := range r.events("matrix") {
		switch ev.EventType {
		case subjects.EventJudgeVerdict:
			verdicts[ev.Attempt] = [2]string{ev.Action, ev.Reasoning}
		case subjects.EventImplementerChange:
			var m struct{ Workspace subjects.WorkspaceChange }
			require.NoError(t, json.Unmarshal(ev.Metadata, &m))
			for _, f := range m.Workspace.Files {
				files[ev.Attempt] = append(files[ev.Attempt], f.Path)
			}
		}
	}
	require.Equal(t, map[int][2]string{1: {subjects.VerdictReject, "add a test that checks hello.txt"},
		2: {subjects.VerdictApprove, "hello.txt and its test are there"}}, verdicts)
	require.Subset(t, files[1], []string{"hello.txt", "verified.txt"}, "the agent's write and its command's effect are recorded")
	require.Subset(t, files[2], []string{"hello_test.sh", "test.out"}, "attempt 2's test ran in the worktree")

	evs := r.implementerEvents("matrix", "T1")
	m1, m2 := metaOf(t, evs[1]), metaOf(t, evs[2])
	require.Equal(t, runner.SessionFresh, m1.Session)
	require.NotEmpty(t, m1.ID)
	require.Equal(t, ag.resumed, m2.Session, "%s", evs[2].Metadata)
	require.Equal(t, ag.reason, m2.Reason)
	reqs := loop(r.impl)
	if ag.resumed == runner.SessionResumed {
		require.Equal(t, m1.ID, m2.ID)
		require.Len(t, reqs, 5)
		if ag.historyOnly {
			require.Contains(t, string(reqs[3].Body), "wrote hello.txt", "the CLI continued the session: attempt 1's answer is in its history")
		} else {
			require.Equal(t, m1.ID, reqs[3].Session, "the CLI continued the session")
		}
		require.Greater(t, reqs[3].Messages, reqs[2].Messages, "the resumed request carries the earlier conversation")
		require.Contains(t, string(reqs[3].Body), "add a test that checks hello.txt")
		require.Less(t, reqs[3].InputTokens, reqs[0].InputTokens, "fewer fresh input tokens than a cold start")
	} else {
		require.NotEqual(t, m1.ID, m2.ID)
		require.Len(t, reqs, 5)
		require.Contains(t, string(reqs[3].Body), "add a test that checks hello.txt", "the full prompt and the feedback")
	}
	r.requireCost(ag, "matrix")
}

func matrixRefused(t *testing.T, ag matrixAgent) {
	r := startMatrixRig(t, ag, []agenttest.Turn{{Status: http.StatusUnauthorized, Text: ag.refusal + " (key " + matrixKey + ")"}}, nil, false)
	after := r.submit(task("refused", "T1"))
	end := r.waitTerminal("refused", after, 1)["T1"]
	require.Equal(t, subjects.EventTaskFailed, end.EventType)
	require.Equal(t, string(subjects.ReasonRoleFailed), end.Action, "a refused key is not retried: %s", end.Error)
	require.Len(t, loop(r.impl), 1, "a refused key is not retried")
	require.Contains(t, end.Error, ag.refused, "the agent's own message is recorded")
	for _, ev := range r.events("refused") {
		require.NotContains(t, string(ev.Output)+string(ev.Metadata)+ev.Error, matrixKey, "the key never reaches the record")
	}
	require.Empty(t, r.judge.Requests(), "the judge is not started")
	t.Logf("recorded: %s %s", end.Action, end.Error)
}

func matrixBudget(t *testing.T, ag matrixAgent) {
	w := ag.write("hello.txt", "hi\n")
	w.InputTokens, w.OutputTokens = 200000, 2000
	r := startMatrixRig(t, ag, []agenttest.Turn{w, {Text: `{"change":"wrote hello.txt","files":["hello.txt"]}`, InputTokens: 210000, OutputTokens: 500}}, nil, false)
	req := task("budget", "T1")
	req.Metadata = map[string]json.RawMessage{ledger.MetaTaskBudget: json.RawMessage("0.1")}
	after := r.submit(req)
	end := r.waitTerminal("budget", after, 1)["T1"]
	require.Equal(t, subjects.EventTaskFailed, end.EventType)
	require.Equal(t, string(subjects.ReasonBudgetExceeded), end.Action, end.Error)
	require.Contains(t, end.Error, "task budget exceeded")
	for _, ev := range r.events("budget") {
		require.NotEqual(t, subjects.EventJudgeVerdict, ev.EventType, "the judge is not started")
	}
	require.Empty(t, r.judge.Requests(), "the judge is not started")
	r.requireCost(ag, "budget")
	t.Logf("recorded: %s", end.Error)
}
