//go:build linux

package tests

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/agenttest"
	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/sandbox/sandboxtest"
	"github.com/droverhq/drover/subjects"
)

// agentRig is `drover serve` with workspaces (a local bare remote), the
// bubblewrap sandbox, a sim planner and the roles the test gives: real
// agent CLIs against loopback fakes of their model APIs.
type agentRig struct {
	*bundle
	// config is the configuration of a worker with its own workspace
	// directory.
	config func() string
	a      *proc // worker A, started with the rig
}

// startAgentRig starts worker A with roles: the YAML of the implementer
// and judge (two-space indented, under roles:), then any other top-level
// keys; readOnly are the directories the sandbox shows besides the
// system's (the CLIs, the judge's script).
func startAgentRig(t *testing.T, roles string, readOnly ...string) *agentRig {
	t.Helper()
	sandboxtest.Require(t)
	clis, err := filepath.Abs(os.Getenv(agenttest.CLIsEnv))
	require.NoError(t, err)
	ro, err := json.Marshal(append([]string{clis}, readOnly...))
	require.NoError(t, err)
	r := &agentRig{bundle: setup(t)}
	remote := newGitRemote(t)
	r.config = func() string {
		return fmt.Sprintf("roles:\n  planner: {runner: sim}\n%s\nworkspace: {repo: %q, dir: %q}\nsandbox: {read_only: %s}\n",
			roles, remote.dir, filepath.Join(r.t.TempDir(), "workspaces"), ro)
	}
	r.a = r.start("A")
	return r
}

// start starts a worker process with its own workspace directory.
func (r *agentRig) start(id string) *proc {
	r.t.Helper()
	path := filepath.Join(r.t.TempDir(), "drover.yaml")
	require.NoError(r.t, os.WriteFile(path, []byte(r.config()), 0o600))
	return r.startProc("--config", path, "--worker-id", id, "--ack-wait", "2s")
}

// sessionRig is an agentRig with the real Claude Code as implementer (its
// preset) against a scripted fake, and session_judge.sh as judge.
type sessionRig struct {
	*agentRig
	fake *agenttest.Anthropic
	wait string // the file the judge waits for (rigOptions.wait)
}

// rigOptions: metered, the fake reports measured usage with prompt
// caching (agenttest.Anthropic.Meter); wipe and wait set the judge's
// JUDGE_WIPE and JUDGE_WAIT (see session_judge.sh).
type rigOptions struct{ metered, wipe, wait bool }

func startSessionRig(t *testing.T, o rigOptions, script ...agenttest.Turn) *sessionRig {
	t.Helper()
	sandboxtest.Require(t)
	bin := agenttest.CLI(t, "claude")
	judge, err := filepath.Abs(filepath.Join("testdata", "session_judge.sh"))
	require.NoError(t, err)
	fake := agenttest.NewAnthropic(t, script...)
	if o.metered {
		fake.Meter()
	}
	waitDir := t.TempDir()
	judgeEnv, wait := "", ""
	if o.wipe {
		judgeEnv = `JUDGE_WIPE: "1", `
	}
	if o.wait {
		wait = filepath.Join(waitDir, "go")
		judgeEnv += fmt.Sprintf("JUDGE_WAIT: %q", wait)
	}
	roles := fmt.Sprintf(`  implementer:
    agent: claude-code
    exec:
      env: {PATH: %q, ANTHROPIC_BASE_URL: %q, ANTHROPIC_API_KEY: sk-ant-session-test, ANTHROPIC_MODEL: claude-sonnet-4-5, CLAUDE_CODE_MAX_RETRIES: "0"}
  judge: {runner: exec, exec: {argv: [sh, %q], env: {%s}, inherit: [PATH]}}`,
		agenttest.Path(bin), fake.URL, judge, judgeEnv)
	return &sessionRig{agentRig: startAgentRig(t, roles, filepath.Dir(judge), waitDir), fake: fake, wait: wait}
}

// implementerEvents returns the task's implementer_change events by
// attempt.
func (r *agentRig) implementerEvents(wf, id string) map[int]subjects.AuditEvent {
	r.t.Helper()
	out := map[int]subjects.AuditEvent{}
	for _, ev := range r.events(wf) {
		if ev.TaskID == id && ev.EventType == subjects.EventImplementerChange {
			out[ev.Attempt] = ev
		}
	}
	return out
}

// sessionMeta is an implementer event's session metadata.
type sessionMeta struct {
	Session string          `json:"session"`
	Reason  string          `json:"session_reason"`
	ID      string          `json:"session_id"`
	State   json.RawMessage `json:"session_state"`
}

func metaOf(t *testing.T, ev subjects.AuditEvent) sessionMeta {
	t.Helper()
	var m sessionMeta
	require.NoError(t, json.Unmarshal(ev.Metadata, &m), "%s", ev.Metadata)
	return m
}

// implementerScript is a realistic implementer: attempt 1 looks around,
// writes hello.txt, checks it and answers; resumed after the rejection
// (its history holds 4 answers) it adds the test, runs it and answers. A
// cold restart replays attempt 1's script: it has to look around again.
func implementerScript() []agenttest.Turn {
	bash := func(cmd string, out int64) agenttest.Turn {
		return agenttest.Turn{Tool: "Bash", Input: map[string]any{"command": cmd, "description": "run"}, OutputTokens: out}
	}
	return []agenttest.Turn{
		bash("ls -la && cat README.md shared.txt src/a.go", 120),
		bash(`printf 'hi\n' > hello.txt`, 80),
		bash("test -f hello.txt && cat hello.txt", 40),
		{Text: `{"change":"wrote hello.txt","files":["hello.txt"],"notes":"cat hello.txt: hi"}`, OutputTokens: 150},
		bash(`printf '#!/bin/sh\ngrep -qx hi hello.txt\n' > hello_test.sh`, 90),
		bash("sh hello_test.sh && echo pass", 40),
		{Text: `{"change":"added hello_test.sh","files":["hello.txt","hello_test.sh"],"notes":"sh hello_test.sh: pass"}`, OutputTokens: 150},
	}
}

// usageOf sums the fake's usage over requests: fresh input, cached input,
// output, and Claude Code's price of them (Sonnet: $3 a million input, $0.30
// cached, $15 output).
func usageOf(reqs []agenttest.Request) (fresh, cached, out int64, usd float64) {
	for _, q := range reqs {
		fresh, cached, out = fresh+q.InputTokens, cached+q.CacheReadTokens, out+q.OutputTokens
	}
	return fresh, cached, out, (float64(fresh)*3 + float64(cached)*0.3 + float64(out)*15) / 1e6
}

// bySession splits the fake's agent-loop requests by session, in order.
func bySession(reqs []agenttest.Request) ([]string, map[string][]agenttest.Request) {
	var order []string
	m := map[string][]agenttest.Request{}
	for _, q := range reqs {
		if q.Turn < 0 {
			continue
		}
		if _, ok := m[q.Session]; !ok {
			order = append(order, q.Session)
		}
		m[q.Session] = append(m[q.Session], q)
	}
	return order, m
}

// A task the judge rejects once, run by the real Claude Code in the
// sandbox: the second attempt resumes the first one's session from the
// object store (the judge wiped the CLI's state from the task's HOME, as
// on another worker) with the feedback alone; the fake sees the same
// session carry the earlier conversation, with fewer fresh input tokens
// than a cold start. With the kept session removed from the object store
// the second attempt starts fresh with the full prompt, and the record
// says why. The cost in `drover cost` is what the fake reported. The
// figures of both (docs/performance.md, "Agent sessions") are logged.
func TestAgentSessionKeptAcrossAttempts(t *testing.T) {
	t.Parallel()
	sandboxtest.Require(t)
	agenttest.CLI(t, "claude") // skipped here, not in each row: the figures compare both
	type figures struct {
		calls              int
		fresh, cached, out int64
		usd                float64
	}
	run := func(t *testing.T, removeBlobs bool) figures {
		r := startSessionRig(t, rigOptions{metered: true, wipe: true, wait: removeBlobs}, implementerScript()...)
		after := r.submit(task("sess", "T1"))
		if removeBlobs {
			require.Eventually(t, func() bool { _, ok := r.implementerEvents("sess", "T1")[1]; return ok },
				2*time.Minute, 50*time.Millisecond, "attempt 1 is recorded")
			require.Positive(t, r.removeBlobs(), "the kept session is a blob")
			require.NoError(t, os.WriteFile(r.wait, nil, 0o600))
		}
		end := r.waitTerminal("sess", after, 1)["T1"]
		require.Equal(t, subjects.EventTaskCompleted, end.EventType, "%s %s", end.Action, end.Error)

		evs := r.implementerEvents("sess", "T1")
		require.Len(t, evs, 2)
		m1, m2 := metaOf(t, evs[1]), metaOf(t, evs[2])
		require.Equal(t, runner.SessionFresh, m1.Session)
		require.NotEmpty(t, m1.ID)
		require.Contains(t, string(m1.State), `"blob"`, "the session's state is kept in the object store")
		order, sessions := bySession(r.fake.Requests())
		if removeBlobs {
			require.Equal(t, runner.SessionFallback, m2.Session)
			require.Contains(t, m2.Reason, "not found", "the record says why")
			require.NotEqual(t, m1.ID, m2.ID)
			require.Equal(t, []string{m1.ID, m2.ID}, order, "a fresh session")
			require.Contains(t, string(sessions[m2.ID][0].Body), "You are the implementer", "the full prompt")
		} else {
			require.Equal(t, runner.SessionResumed, m2.Session, "%s", evs[2].Metadata)
			require.Equal(t, m1.ID, m2.ID)
			require.Equal(t, []string{m1.ID}, order, "one session across both attempts")
			reqs := sessions[m1.ID]
			require.Len(t, reqs, 7)
			require.Greater(t, reqs[4].Messages, reqs[3].Messages, "the resumed request carries the earlier conversation")
			require.Contains(t, string(reqs[4].Body), "add a test that checks hello.txt")
			require.Less(t, reqs[4].InputTokens, reqs[0].InputTokens, "fewer fresh input tokens than a cold start")
			require.Positive(t, reqs[4].CacheReadTokens)
		}

		var f figures
		for _, q := range r.fake.Requests() {
			if q.Turn >= 0 {
				f.calls++
			}
		}
		f.fresh, f.cached, f.out, f.usd = usageOf(r.fake.Requests())
		code, out, errOut := r.drover("cost", "--workflow", "sess", "--json")
		require.Zero(t, code, errOut)
		var rep struct {
			Total ledger.Totals `json:"total"`
		}
		require.NoError(t, json.Unmarshal([]byte(out), &rep), out)
		require.Equal(t, f.fresh+f.cached, rep.Total.InputTokens, out)
		require.Equal(t, f.out, rep.Total.OutputTokens, out)
		require.InDelta(t, f.usd, rep.Total.USD, 1e-9, "Claude Code's price of what the fake reported: %s", out)
		return f
	}
	var kept, cold figures
	t.Run("kept", func(t *testing.T) { kept = run(t, false) })
	t.Run("cold", func(t *testing.T) { cold = run(t, true) })
	if t.Failed() {
		return
	}
	for _, row := range []struct {
		name string
		f    figures
	}{{"sessions kept", kept}, {"cold restart", cold}} {
		t.Logf("%-13s: %d model calls, input %d fresh + %d cached, output %d, $%.4f",
			row.name, row.f.calls, row.f.fresh, row.f.cached, row.f.out, row.f.usd)
	}
	t.Logf("kept/cold: fresh input %.0f%%, money %.0f%%", 100*float64(kept.fresh)/float64(cold.fresh), 100*kept.usd/cold.usd)
	require.Less(t, kept.usd, cold.usd)
}

// A worker killed while the judge runs attempt 1: another worker, with
// its own workspace directory and so a fresh private HOME, runs the
// judge's rejection and attempt 2, which resumes the session kept in the
// object store: the fake sees the same session go on.
func TestAgentSessionResumedOnAnotherWorker(t *testing.T) {
	t.Parallel()
	r := startSessionRig(t, rigOptions{metered: true, wait: true}, implementerScript()...)
	t.Cleanup(func() { _ = os.WriteFile(r.wait, nil, 0o600) }) // no judge left waiting
	after := r.submit(task("move", "T1"))
	require.Eventually(t, func() bool { _, ok := r.implementerEvents("move", "T1")[1]; return ok },
		2*time.Minute, 50*time.Millisecond, "attempt 1 is recorded")
	r.a.signal(syscall.SIGKILL)
	require.Error(t, r.a.wait(30*time.Second))
	require.NoError(t, os.WriteFile(r.wait, nil, 0o600))
	r.start("B")
	end := r.waitTerminal("move", after, 1)["T1"]
	require.Equal(t, subjects.EventTaskCompleted, end.EventType, "%s %s", end.Action, end.Error)

	evs := r.implementerEvents("move", "T1")
	require.Len(t, evs, 2)
	require.Equal(t, "A", evs[1].Worker)
	require.Equal(t, "B", evs[2].Worker)
	m1, m2 := metaOf(t, evs[1]), metaOf(t, evs[2])
	require.Equal(t, runner.SessionResumed, m2.Session, "%s", evs[2].Metadata)
	require.Equal(t, m1.ID, m2.ID)
	order, sessions := bySession(r.fake.Requests())
	require.Equal(t, []string{m1.ID}, order, "one session across both workers")
	require.Len(t, sessions[m1.ID], 7)
}

// removeBlobs deletes every object of the blob store.
func (r *agentRig) removeBlobs() int {
	r.t.Helper()
	ctx := context.Background()
	obj, err := r.js.ObjectStore(ctx, r.names.BlobStore())
	require.NoError(r.t, err)
	infos, err := obj.List(ctx)
	if errors.Is(err, jetstream.ErrNoObjectsFound) {
		return 0
	}
	require.NoError(r.t, err)
	for _, info := range infos {
		require.NoError(r.t, obj.Delete(ctx, info.Name))
	}
	return len(infos)
}
