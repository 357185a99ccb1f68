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

// A Claude Code implementer in the sandbox keeps its session: the first
// attempt's result carries the session file from its private HOME; a
// second attempt given that state in a wiped HOME (another worker)
// resumes it (the fake sees the same session and the earlier
// conversation); given none, or a state the CLI refuses, it starts fresh
// and says why.
func TestRealClaudeCodeSessionKept(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	bin := agenttest.CLI(t, "claude")
	clis, err := filepath.Abs(os.Getenv(agenttest.CLIsEnv))
	require.NoError(t, err)
	dir := t.TempDir()
	fake := agenttest.NewAnthropic(t,
		agenttest.Turn{Tool: "Write", Input: map[string]any{"file_path": filepath.Join(dir, "hello.txt"), "content": "hi\n"}, InputTokens: 1000, OutputTokens: 100},
		agenttest.Turn{Text: `{"change":"first attempt"}`, InputTokens: 1100, OutputTokens: 10},
		agenttest.Turn{Text: `{"change":"second attempt"}`, InputTokens: 1200, OutputTokens: 10},
	)
	env := claudeEnv(t, fake)
	env["PATH"] = agenttest.Path(bin)
	e, err := NewExec(subjects.RoleImplementer, ExecConfig{Agent: AgentClaudeCode, Env: env,
		Sandbox: newSandbox(t, sandbox.Config{ReadOnly: []string{clis}})}, nil)
	require.NoError(t, err)
	run := func(home string, attempt int, s *Session) Result {
		t.Helper()
		req := simReq(t, subjects.RoleImplementer, "")
		req.Attempt, req.Session = attempt, s
		if attempt > 1 {
			req.Feedback = "add a test"
		}
		req.Workspace = &Workspace{Dir: dir, Branch: "drover/wf-1/T1.1", Base: strings.Repeat("0", 40),
			Sandbox: sandbox.Paths{Work: dir, Home: home}}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		res, err := e.Run(ctx, req)
		require.NoError(t, err)
		return res
	}

	first := run(filepath.Join(t.TempDir(), "home"), 1, nil)
	require.JSONEq(t, `{"change":"first attempt"}`, string(first.Output))
	require.Equal(t, SessionFresh, first.Metadata["session"])
	id, _ := first.Metadata["session_id"].(string)
	require.NotEmpty(t, id)
	require.NotNil(t, first.Session, "the session's state is kept")
	require.Equal(t, id, first.Session.ID)
	require.Contains(t, string(first.Session.Data), id)
	firstReqs := fake.Requests()

	// Another worker: a new HOME, the state restored into it.
	before := len(fake.Requests())
	firstCost, _ := first.Metadata["cost_usd"].(float64)
	require.Equal(t, firstCost, first.Metadata["session_cost_usd"])
	second := run(filepath.Join(t.TempDir(), "home"), 2, &Session{Agent: AgentClaudeCode, ID: id, State: first.Session.Data, CostUSD: firstCost})
	require.Equal(t, SessionResumed, second.Metadata["session"], "%v", second.Metadata)
	require.JSONEq(t, `{"change":"second attempt"}`, string(second.Output), "the script went on from the earlier conversation")
	require.Equal(t, id, second.Metadata["session_id"])
	resumed := fake.Requests()[before]
	require.Equal(t, id, resumed.Session, "the CLI continued the session")
	require.Greater(t, resumed.Messages, firstReqs[len(firstReqs)-1].Messages, "the resumed request carries the earlier conversation")
	require.Contains(t, string(resumed.Body), "add a test")
	// The CLI's total counts the session's first run too; the result's
	// cost is the resumed run's own: its one call at $3 and $15 a million.
	require.InDelta(t, firstCost+(1200*3+10*15)/1e6, second.Metadata["session_cost_usd"], 1e-9)
	require.InDelta(t, (1200*3+10*15)/1e6, second.Metadata["cost_usd"], 1e-9)
	require.NotContains(t, string(resumed.Body[strings.LastIndex(string(resumed.Body), `"role":"user"`):]), "You are the implementer", "a resumed attempt gets the short prompt")

	for _, tc := range []struct {
		name   string
		s      *Session
		reason string
	}{
		{"missing state", &Session{Agent: AgentClaudeCode, ID: id, Missing: "blobs: get 00ff: nats: object not found"}, "session state: blobs: get 00ff: nats: object not found"},
		{"refused by the CLI", &Session{Agent: AgentClaudeCode, ID: "0b9c3a57-1f5e-4bb2-9d9c-000000000000", State: []byte("not a session\n")}, "the CLI could not resume"},
		{"another agent", &Session{Agent: AgentCodex, ID: id, State: first.Session.Data}, `the previous attempt ran agent "codex"`},
	} {
		before := len(fake.Requests())
		res := run(filepath.Join(t.TempDir(), "home"), 2, tc.s)
		require.Equal(t, SessionFallback, res.Metadata["session"], tc.name)
		require.Contains(t, res.Metadata["session_reason"], tc.reason, tc.name)
		require.JSONEq(t, `{"change":"first attempt"}`, string(res.Output), "%s: a fresh session runs the script from its start", tc.name)
		cold := fake.Requests()[before:]
		require.NotEqual(t, id, cold[len(cold)-1].Session, tc.name)
		require.Contains(t, string(cold[len(cold)-1].Body), "You are the implementer", "%s: the full prompt", tc.name)
	}
}
