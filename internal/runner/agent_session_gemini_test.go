//go:build linux

package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/agenttest"
	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/internal/sandbox/sandboxtest"
	"github.com/droverhq/drover/subjects"
)

const fakeGeminiModel = "gemini-2.5-flash"

// geminiSessionRig is the real Gemini CLI as a sandboxed implementer
// against a metered Gemini fake that plays geminiImplementerScript. The
// settings that select the key are the system's, shown read-only, so
// that the CLI's state stays in the private HOME.
type geminiSessionRig struct {
	fake *agenttest.Gemini
	e    *Exec
}

// newGeminiSessionRig starts the rig; cliHome sets GEMINI_CLI_HOME to
// cliHome.
func newGeminiSessionRig(t *testing.T, cliHome string) *geminiSessionRig {
	t.Helper()
	sandboxtest.Require(t)
	bin := agenttest.CLI(t, "gemini")
	clis, err := filepath.Abs(os.Getenv(agenttest.CLIsEnv))
	require.NoError(t, err)
	settings := filepath.Join(agenttest.GeminiHome(t), ".gemini")
	r := &geminiSessionRig{fake: agenttest.NewGemini(t, geminiImplementerScript()...)}
	r.fake.Meter()
	vars := map[string]string{"PATH": agenttest.Path(bin), "GEMINI_API_KEY": "gemini-session-test-key",
		"GOOGLE_GEMINI_BASE_URL": r.fake.URL, "GEMINI_MODEL": fakeGeminiModel,
		"GEMINI_CLI_SYSTEM_SETTINGS_PATH": filepath.Join(settings, "settings.json")}
	if cliHome != "" {
		vars["GEMINI_CLI_HOME"] = cliHome
	}
	r.e, err = NewExec(subjects.RoleImplementer, ExecConfig{Agent: AgentGemini, Env: vars,
		Sandbox: newSandbox(t, sandbox.Config{ReadOnly: []string{clis, settings}})}, nil)
	require.NoError(t, err)
	return r
}

// run runs attempt in the worktree dir with a private HOME home (a new
// one, and a new dir, are another worker's) on session s.
func (r *geminiSessionRig) run(t *testing.T, dir, home string, attempt int, s *Session) Result {
	t.Helper()
	req := simReq(t, subjects.RoleImplementer, "")
	req.Attempt, req.Session = attempt, s
	if attempt > 1 {
		req.Feedback = "add a test that checks hello.txt"
	}
	req.Workspace = &Workspace{Dir: dir, Branch: "drover/wf-1/T1.1", Base: strings.Repeat("0", 40),
		Sandbox: sandbox.Paths{Work: dir, Home: home}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := r.e.Run(ctx, req)
	require.NoError(t, err)
	return res
}

// loop is the requests of the agent's loop, not the CLI's own checks.
func (r *geminiSessionRig) loop() []agenttest.Request {
	var out []agenttest.Request
	for _, q := range r.fake.Requests() {
		if q.Turn >= 0 {
			out = append(out, q)
		}
	}
	return out
}

// geminiImplementerScript is attempt 1 (write hello.txt, check it,
// answer) and, resumed after the rejection (its history holds 3
// answers), attempt 2 (add a test, run it, answer). A cold restart
// replays attempt 1.
func geminiImplementerScript() []agenttest.Turn {
	shell := func(c string, out int64) agenttest.Turn {
		return agenttest.Turn{Tool: "run_shell_command", Input: map[string]any{"command": c}, OutputTokens: out}
	}
	return []agenttest.Turn{
		{Tool: "write_file", Input: map[string]any{"file_path": "hello.txt", "content": "hi\n"}, OutputTokens: 100},
		shell("test -f hello.txt && cat hello.txt", 40),
		{Text: `{"change":"wrote hello.txt","files":["hello.txt"]}`, OutputTokens: 150},
		shell(`printf 'grep -qx hi hello.txt\n' > hello_test.sh && sh hello_test.sh && echo pass > passed.txt`, 90),
		{Text: `{"change":"added hello_test.sh","files":["hello.txt","hello_test.sh"]}`, OutputTokens: 150},
	}
}

// A Gemini CLI implementer in the sandbox keeps its session: the first
// attempt's result carries its session file from the private HOME's
// .gemini/tmp/<project>/chats; the second, given that state in a new
// HOME and a worktree at another path (another worker), resumes it with
// the feedback alone: the fake sees the earlier conversation in the
// resumed request. Without the state (its blob gone) it starts fresh
// with the full prompt, and says why. The figures of both are logged
// (docs/using-a-real-model.md, Gemini's sessions).
func TestRealGeminiSessionKept(t *testing.T) {
	t.Parallel()
	sandboxtest.Require(t)
	agenttest.CLI(t, "gemini") // skipped here, not in each row: the figures compare both
	run := func(t *testing.T, cold bool) (sessionFigures, []agenttest.Request) {
		r := newGeminiSessionRig(t, "")
		dir := t.TempDir()
		first := r.run(t, dir, filepath.Join(t.TempDir(), "home"), 1, nil)
		require.JSONEq(t, `{"change":"wrote hello.txt","files":["hello.txt"]}`, string(first.Output))
		require.Equal(t, SessionFresh, first.Metadata["session"])
		id, _ := first.Metadata["session_id"].(string)
		require.NotEmpty(t, id)
		require.NotNil(t, first.Session, "the session's state is kept: %v", first.Metadata)
		require.Equal(t, &SessionState{Agent: AgentGemini, ID: id, Data: first.Session.Data}, first.Session)
		require.Contains(t, string(first.Session.Data), `"sessionId":"`+id+`"`, "Gemini CLI's session file")
		firstLoop := r.loop()
		require.Len(t, firstLoop, 3)
		nFirst := len(r.fake.Requests())
		requireUsage(t, r.fake.Requests(), first)

		// Another worker: a new HOME, and a worktree at another path
		// holding the branch's files.
		dir2, home := t.TempDir(), filepath.Join(t.TempDir(), "home")
		require.NoError(t, os.WriteFile(filepath.Join(dir2, "hello.txt"), []byte("hi\n"), 0o600))
		s := &Session{Agent: AgentGemini, ID: id, State: first.Session.Data}
		if cold {
			s = &Session{Agent: AgentGemini, ID: id, Missing: "blobs: get 00ff: nats: object not found"}
		}
		second := r.run(t, dir2, home, 2, s)
		requireUsage(t, r.fake.Requests()[nFirst:], second)
		reqs := r.loop()[len(firstLoop):]
		if cold {
			require.Equal(t, SessionFallback, second.Metadata["session"])
			require.Equal(t, "session state: blobs: get 00ff: nats: object not found", second.Metadata["session_reason"])
			require.JSONEq(t, `{"change":"wrote hello.txt","files":["hello.txt"]}`, string(second.Output), "a fresh session runs the script from its start")
			require.NotEqual(t, id, second.Metadata["session_id"])
			require.Len(t, reqs, 3)
			require.Contains(t, string(reqs[0].Body), "You are the implementer", "the full prompt")
		} else {
			require.Equal(t, SessionResumed, second.Metadata["session"], "%v", second.Metadata)
			require.JSONEq(t, `{"change":"added hello_test.sh","files":["hello.txt","hello_test.sh"]}`, string(second.Output),
				"the script went on from the earlier conversation")
			require.Equal(t, id, second.Metadata["session_id"])
			require.Len(t, reqs, 2)
			require.Greater(t, reqs[0].Messages, firstLoop[2].Messages, "the resumed request carries the earlier conversation")
			body := string(reqs[0].Body)
			require.Contains(t, body, "add a test that checks hello.txt")
			require.Contains(t, body, "wrote hello.txt", "attempt 1's answer is in the history")
			require.Equal(t, 1, strings.Count(body, "You are the implementer"), "the full prompt once, from attempt 1; the resumed one is short")
			_, err := os.Stat(filepath.Join(dir2, "passed.txt"))
			require.NoError(t, err, "the resumed agent's command ran in the new worktree")
			require.NotNil(t, second.Session, "the resumed session is kept again")
			require.Greater(t, len(second.Session.Data), len(first.Session.Data), "with the new turns")
			got, err := filepath.Glob(filepath.Join(home, ".gemini", "tmp", "*", "chats", "session-*-"+id[:8]+".jsonl"))
			require.NoError(t, err)
			require.Len(t, got, 1, "restored where the CLI looks for the new worktree's sessions, and appended to")
		}
		var f sessionFigures
		all := r.loop()
		f.calls = len(all)
		for _, q := range all {
			f.fresh, f.cached, f.out = f.fresh+q.InputTokens, f.cached+q.CacheReadTokens, f.out+q.OutputTokens
		}
		return f, reqs
	}
	var kept, cold sessionFigures
	var resumed, restarted []agenttest.Request
	t.Run("kept", func(t *testing.T) { kept, resumed = run(t, false) })
	t.Run("cold", func(t *testing.T) { cold, restarted = run(t, true) })
	if t.Failed() {
		return
	}
	t.Logf("first request of attempt 2: resumed %d fresh + %d cached input tokens, %d contents; cold %d fresh + %d cached, %d contents",
		resumed[0].InputTokens, resumed[0].CacheReadTokens, resumed[0].Messages,
		restarted[0].InputTokens, restarted[0].CacheReadTokens, restarted[0].Messages)
	// gemini-2.5-flash a million tokens: $0.30 input, $0.03 cached
	// input, $2.50 output. drover cost prices all input at the input
	// price. The agent's loop only: the CLI's checks are the same in both.
	logSessionFigures(t, kept, cold, 0.3, 0.03, 2.5)
}

// A Gemini session that cannot be resumed falls back to a fresh session
// with the full prompt, and the record says why: a state the CLI
// refuses, a GEMINI_CLI_HOME outside the private HOME, another agent's
// session.
func TestRealGeminiSessionFallback(t *testing.T) {
	t.Parallel()
	const id = "5b0c2f0e-8d1a-4c57-9f3e-2a6d1b7c9e40"
	for _, tc := range []struct {
		name    string
		cliHome bool
		s       *Session
		reason  string
	}{
		{"refused by the CLI", false, &Session{Agent: AgentGemini, ID: id, State: []byte("not a session\n")}, "the CLI could not resume: Error resuming session"},
		{"GEMINI_CLI_HOME set", true, &Session{Agent: AgentGemini, ID: id, State: []byte("{}\n")},
			"GEMINI_CLI_HOME is set: the sessions are outside the private HOME"},
		{"another agent", false, &Session{Agent: AgentCodex, ID: id, State: []byte("{}\n")}, `the previous attempt ran agent "codex"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			cliHome := ""
			if tc.cliHome {
				cliHome = filepath.Join(dir, ".gemini-home")
				require.NoError(t, os.MkdirAll(cliHome, 0o700))
			}
			r := newGeminiSessionRig(t, cliHome)
			res := r.run(t, dir, filepath.Join(t.TempDir(), "home"), 2, tc.s)
			require.Equal(t, SessionFallback, res.Metadata["session"])
			require.Contains(t, res.Metadata["session_reason"], tc.reason)
			require.JSONEq(t, `{"change":"wrote hello.txt","files":["hello.txt"]}`, string(res.Output), "a fresh session runs the script from its start")
			reqs := r.loop()
			require.Len(t, reqs, 3)
			require.NotEqual(t, id, res.Metadata["session_id"])
			require.Contains(t, string(reqs[0].Body), "You are the implementer", "the full prompt")
			requireUsage(t, r.fake.Requests(), res)
		})
	}
}
