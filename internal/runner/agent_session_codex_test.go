//go:build linux

package runner

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/agenttest"
	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/internal/sandbox/sandboxtest"
	"github.com/droverhq/drover/subjects"
)

// codexSessionRig is the real Codex as a sandboxed implementer against a
// metered Responses fake that plays codexImplementerScript, its provider
// given as -c options so that CODEX_HOME stays in the private HOME.
type codexSessionRig struct {
	fake *agenttest.Responses
	e    *Exec
	dir  string
}

// newCodexSessionRig starts the rig; codexHome sets CODEX_HOME to a
// directory of the worktree.
func newCodexSessionRig(t *testing.T, codexHome bool) *codexSessionRig {
	t.Helper()
	sandboxtest.Require(t)
	bin := agenttest.CLI(t, "codex")
	clis, err := filepath.Abs(os.Getenv(agenttest.CLIsEnv))
	require.NoError(t, err)
	r := &codexSessionRig{fake: agenttest.NewResponses(t, codexImplementerScript()...), dir: t.TempDir()}
	r.fake.Meter()
	preset := AgentArgv(AgentCodex)
	argv := slices.Concat(preset[:len(preset)-1], agenttest.CodexConfig(r.fake.URL+"/v1", fakeCodexModel), []string{"-"})
	vars := map[string]string{"PATH": agenttest.Path(bin), "OPENAI_API_KEY": "sk-codex-session-test"}
	if codexHome {
		vars["CODEX_HOME"] = filepath.Join(r.dir, ".codex-home")
		require.NoError(t, os.MkdirAll(vars["CODEX_HOME"], 0o700))
	}
	r.e, err = NewExec(subjects.RoleImplementer, ExecConfig{Agent: AgentCodex, Argv: argv, Env: vars,
		Sandbox: newSandbox(t, sandbox.Config{ReadOnly: []string{clis}})}, nil)
	require.NoError(t, err)
	return r
}

// run runs attempt in the worktree with a private HOME home (a new one is
// another worker's) on session s.
func (r *codexSessionRig) run(t *testing.T, home string, attempt int, s *Session) Result {
	t.Helper()
	req := simReq(t, subjects.RoleImplementer, "")
	req.Attempt, req.Session = attempt, s
	if attempt > 1 {
		req.Feedback = "add a test that checks hello.txt"
	}
	req.Workspace = &Workspace{Dir: r.dir, Branch: "drover/wf-1/T1.1", Base: strings.Repeat("0", 40),
		Sandbox: sandbox.Paths{Work: r.dir, Home: home}}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	res, err := r.e.Run(ctx, req)
	require.NoError(t, err)
	return res
}

// codexImplementerScript is attempt 1 (look around, write hello.txt,
// check it, answer) and, resumed after the rejection (its history holds
// 4 answers), attempt 2 (add a test, run it, answer). A cold restart
// replays attempt 1.
func codexImplementerScript() []agenttest.Turn {
	cmd := func(c string, out int64) agenttest.Turn {
		return agenttest.Turn{Tool: "exec_command", Input: map[string]any{"cmd": c}, OutputTokens: out}
	}
	return []agenttest.Turn{
		cmd("ls -la", 120),
		cmd(`printf 'hi\n' > hello.txt`, 80),
		cmd("test -f hello.txt && cat hello.txt", 40),
		{Text: `{"change":"wrote hello.txt","files":["hello.txt"]}`, OutputTokens: 150},
		cmd(`printf '#!/bin/sh\ngrep -qx hi hello.txt\n' > hello_test.sh`, 90),
		cmd("sh hello_test.sh && echo pass > passed.txt", 40),
		{Text: `{"change":"added hello_test.sh","files":["hello.txt","hello_test.sh"]}`, OutputTokens: 150},
	}
}

// requireUsage checks that res's usage is what the fake reported for reqs.
func requireUsage(t *testing.T, reqs []agenttest.Request, res Result) {
	t.Helper()
	var fresh, cached, out int64
	for _, q := range reqs {
		fresh, cached, out = fresh+q.InputTokens, cached+q.CacheReadTokens, out+q.OutputTokens
	}
	want := map[string]any{"input_tokens": fresh + cached, "output_tokens": out}
	if cached > 0 {
		want["cache_read_input_tokens"] = cached
	}
	require.Equal(t, want, res.Metadata["usage"], "the tokens the fake reported, for the ledger")
}

// A Codex implementer in the sandbox keeps its session: the first
// attempt's result carries its rollout file from the private HOME's
// .codex/sessions; the second, given that state in a new HOME (another
// worker), resumes the thread with the feedback alone: the fake sees the
// same thread carry the earlier conversation, with fewer fresh input
// tokens than a cold start. Without the state (its blob gone) it starts
// fresh with the full prompt, and says why. The figures of both are
// logged (docs/using-a-real-model.md, Codex's sessions).
func TestRealCodexSessionKept(t *testing.T) {
	t.Parallel()
	sandboxtest.Require(t)
	agenttest.CLI(t, "codex") // skipped here, not in each row: the figures compare both
	run := func(t *testing.T, cold bool) (sessionFigures, []agenttest.Request) {
		r := newCodexSessionRig(t, false)
		first := r.run(t, filepath.Join(t.TempDir(), "home"), 1, nil)
		require.JSONEq(t, `{"change":"wrote hello.txt","files":["hello.txt"]}`, string(first.Output))
		require.Equal(t, SessionFresh, first.Metadata["session"])
		id, _ := first.Metadata["session_id"].(string)
		require.NotEmpty(t, id)
		require.NotNil(t, first.Session, "the session's state is kept: %v", first.Metadata)
		require.Equal(t, &SessionState{Agent: AgentCodex, ID: id, Data: first.Session.Data}, first.Session)
		require.Contains(t, string(first.Session.Data), `"type":"session_meta"`, "Codex's rollout file")
		firstReqs := r.fake.Requests()
		require.Len(t, firstReqs, 4)
		requireUsage(t, firstReqs, first)

		home := filepath.Join(t.TempDir(), "home") // another worker's
		u, _ := first.Metadata["session_usage"].(map[string]any)
		require.Equal(t, first.Metadata["usage"], u, "a fresh thread's usage is the run's")
		// As the pipeline records it.
		s := &Session{Agent: AgentCodex, ID: id, State: first.Session.Data, InputTokens: u["input_tokens"].(int64),
			CacheReadTokens: u["cache_read_input_tokens"].(int64), OutputTokens: u["output_tokens"].(int64)}
		if cold {
			s = &Session{Agent: AgentCodex, ID: id, Missing: "blobs: get 00ff: nats: object not found"}
		}
		second := r.run(t, home, 2, s)
		reqs := r.fake.Requests()[len(firstReqs):]
		requireUsage(t, reqs, second)
		if cold {
			require.Equal(t, SessionFallback, second.Metadata["session"])
			require.Equal(t, "session state: blobs: get 00ff: nats: object not found", second.Metadata["session_reason"])
			require.JSONEq(t, `{"change":"wrote hello.txt","files":["hello.txt"]}`, string(second.Output), "a fresh thread runs the script from its start")
			require.NotEqual(t, id, second.Metadata["session_id"])
			require.Len(t, reqs, 4)
			require.NotEqual(t, id, reqs[0].Session, "a new thread")
			require.Contains(t, string(reqs[0].Body), "You are the implementer", "the full prompt")
		} else {
			require.Equal(t, SessionResumed, second.Metadata["session"], "%v", second.Metadata)
			require.JSONEq(t, `{"change":"added hello_test.sh","files":["hello.txt","hello_test.sh"]}`, string(second.Output),
				"the script went on from the earlier conversation")
			require.Equal(t, id, second.Metadata["session_id"])
			require.Len(t, reqs, 3)
			require.Equal(t, id, reqs[0].Session, "the CLI continued the thread")
			require.Greater(t, reqs[0].Messages, firstReqs[3].Messages, "the resumed request carries the earlier conversation")
			require.Positive(t, reqs[0].CacheReadTokens, "the earlier conversation is a cache read")
			body := string(reqs[0].Body)
			require.Contains(t, body, "add a test that checks hello.txt")
			require.Equal(t, 1, strings.Count(body, "You are the implementer"), "the full prompt once, from attempt 1; the resumed one is short")
			_, err := os.Stat(filepath.Join(r.dir, "passed.txt"))
			require.NoError(t, err, "the resumed agent's command ran in the worktree")
			require.NotNil(t, second.Session, "the resumed session is kept again")
			require.Greater(t, len(second.Session.Data), len(first.Session.Data), "with the new turns")
			got, err := filepath.Glob(filepath.Join(home, ".codex", "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
			require.NoError(t, err)
			require.Len(t, got, 1, "restored as Codex keeps it, and appended to")
		}
		var f sessionFigures
		all := r.fake.Requests()
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
	require.Less(t, resumed[0].InputTokens, restarted[0].InputTokens, "fewer fresh input tokens than a cold start")
	// gpt-5-codex a million tokens: $1.25 input, $0.125 cached input,
	// $10 output. drover cost prices all input at the input price.
	logSessionFigures(t, kept, cold, 1.25, 0.125, 10)
}

// A Codex session that cannot be resumed falls back to a fresh thread
// with the full prompt, and the record says why: a state the CLI refuses,
// a CODEX_HOME outside the private HOME, another agent's session.
func TestRealCodexSessionFallback(t *testing.T) {
	t.Parallel()
	const id = "01a24e72-123f-7551-b21c-6912f9670369"
	for _, tc := range []struct {
		name      string
		codexHome bool
		s         *Session
		reason    string
	}{
		{"refused by the CLI", false, &Session{Agent: AgentCodex, ID: id, State: []byte("not a session\n")}, "the CLI could not resume: thread/resume failed"},
		{"CODEX_HOME set", true, &Session{Agent: AgentCodex, ID: id, State: []byte("{}\n")},
			"CODEX_HOME is set: the sessions are outside the private HOME"},
		{"another agent", false, &Session{Agent: AgentClaudeCode, ID: id, State: []byte("{}\n")}, `the previous attempt ran agent "claude-code"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			r := newCodexSessionRig(t, tc.codexHome)
			res := r.run(t, filepath.Join(t.TempDir(), "home"), 2, tc.s)
			require.Equal(t, SessionFallback, res.Metadata["session"])
			require.Contains(t, res.Metadata["session_reason"], tc.reason)
			require.JSONEq(t, `{"change":"wrote hello.txt","files":["hello.txt"]}`, string(res.Output), "a fresh thread runs the script from its start")
			reqs := r.fake.Requests()
			require.Len(t, reqs, 4)
			require.NotEqual(t, id, reqs[0].Session)
			require.Contains(t, string(reqs[0].Body), "You are the implementer", "the full prompt")
			requireUsage(t, reqs, res)
		})
	}
}
