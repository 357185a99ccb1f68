package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/agenttest"
	"github.com/droverhq/drover/internal/cli"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// liveSecret is the configured secret a hostile agent prints: the value
// of a variable named like a secret in the exec role's env.
const liveSecret = "sk-live-hostile-0123456789"

// liveAgent writes a plain exec implementer that prints a tool line and a
// hostile line (HTML, a terminal escape, the secret); then, when more is
// set, waits for that file and prints another tool line; then waits for
// the file release before it answers. It returns the runner config.
func liveAgent(t *testing.T, release, more string) string {
	t.Helper()
	script := filepath.Join(t.TempDir(), "agent.sh")
	require.NoError(t, os.WriteFile(script, []byte(`#!/bin/sh
cat >/dev/null
printf 'tool_call: Bash go test ./...\n'
printf '<script>alert(1)</script> \033[31mred %s\n' "$AGENT_API_KEY"
if [ -n "$MORE" ]; then
  while [ ! -e "$MORE" ]; do sleep 0.05; done
  printf 'tool_call: Edit main.go <img src=x onerror=alert(2)>\n'
fi
while [ ! -e "$RELEASE" ]; do sleep 0.05; done
printf 'all done\n'
`), 0o755))
	return fmt.Sprintf(`roles:
  planner: {runner: sim}
  judge: {runner: sim}
  implementer:
    runner: exec
    exec: {argv: [sh, %q], env: {AGENT_API_KEY: %q, RELEASE: %q, MORE: %q}, inherit: [PATH]}
`, script, liveSecret, release, more)
}

// requireEscaped checks a hostile line as shown: the HTML as text, the
// escape written out, the secret masked.
func requireEscaped(t *testing.T, text string) {
	t.Helper()
	require.Contains(t, text, `<script>alert(1)</script> \x1b[31mred [REDACTED]`)
	require.NotContains(t, text, "\x1b", "no raw escape")
	require.NotContains(t, text, liveSecret)
}

// TestLiveTaskLogsFollow: `drover task logs --follow` prints an exec
// agent's lines while its role runs (the agent waits for the test), the
// hostile line escaped and redacted, and returns when the task ends; the
// stream holds them the same way.
func TestLiveTaskLogsFollow(t *testing.T) {
	t.Parallel()
	b := setup(t)
	release := filepath.Join(t.TempDir(), "release")
	b.startWorker(worker.Config{Concurrency: 2, Runners: runnersFromConfig(t, liveAgent(t, release, ""))})
	const wf = "live-cli"
	after := b.submit(task(wf, "T1"))

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	out := &watchWriter{want: "[REDACTED]", hits: make(chan struct{}, 16)}
	var stderr cliBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Execute(ctx, []string{"--nats-url", b.url, "task", "logs", wf + "/T1", "--follow"}, out, &stderr)
	}()
	out.await(t) // the hostile line, while the agent waits
	seen := time.Now()
	text := out.String()
	require.Contains(t, text, "implementer#1 stdout tool_call: Bash go test ./...", "the tool line came first")
	requireEscaped(t, text)
	select {
	case code := <-done:
		t.Fatalf("logs --follow returned (%d) before the task ended: %s", code, stderr.String())
	default:
	}
	require.Equal(t, "implementer", taskStage(t, b, wf, "T1"), "the role has not ended: the agent waits for the release")

	require.NoError(t, os.WriteFile(release, nil, 0o600))
	select {
	case code := <-done:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(60 * time.Second):
		t.Fatal("logs --follow did not return when the task ended")
	}
	require.Equal(t, subjects.EventTaskCompleted, b.waitTerminal(wf, after, 1)["T1"].EventType)
	require.Contains(t, out.String(), "implementer#1 stdout all done", "the lines after the release, then the end")

	// The stream holds the lines escaped and redacted, in order.
	lines := liveLines(t, b, wf, "T1")
	require.GreaterOrEqual(t, len(lines), 3)
	require.Equal(t, subjects.LiveLine{Workflow: wf, Task: "T1", Role: subjects.RoleImplementer, Attempt: 1, Try: 1,
		Worker: lines[0].Worker, Seq: 1, Kind: subjects.LiveStdout, Text: "tool_call: Bash go test ./...", Time: lines[0].Time}, lines[0])
	requireEscaped(t, lines[1].Text)
	require.Equal(t, uint64(2), lines[1].Seq)
	t.Logf("a line reached the follower %s after the worker read it", seen.Sub(lines[1].Time).Round(time.Millisecond))

	// Without --follow: what the stream holds, and return; --json as stored.
	code, plain, errOut := b.drover("task", "logs", wf+"/T1")
	require.Zero(t, code, errOut)
	require.Equal(t, strings.Count(out.String(), "\n"), strings.Count(plain, "\n"), plain)
	code, js, errOut := b.drover("task", "logs", wf+"/T1", "--json")
	require.Zero(t, code, errOut)
	require.Contains(t, js, `\\x1b[31mred [REDACTED]`)
	require.NotContains(t, js, liveSecret)
}

// liveLines reads a task's live lines from the stream.
func liveLines(t *testing.T, b *bundle, wf, id string) []subjects.LiveLine {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cons, err := b.js.OrderedConsumer(ctx, b.names.LiveStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{b.names.LiveSubject(wf, id)}})
	require.NoError(t, err)
	info, err := cons.Info(ctx)
	require.NoError(t, err)
	var out []subjects.LiveLine
	if info.NumPending == 0 {
		return nil
	}
	batch, err := cons.FetchNoWait(int(info.NumPending))
	require.NoError(t, err)
	for msg := range batch.Messages() {
		require.NotContains(t, string(msg.Data()), liveSecret)
		var l subjects.LiveLine
		require.NoError(t, json.Unmarshal(msg.Data(), &l))
		out = append(out, l)
	}
	require.NoError(t, batch.Error())
	return out
}

// TestLiveConsoleTaskPage: the console's task page in headless Chromium
// shows the agent's lines while its role runs: those kept when the page
// opened, rendered, and a tool call printed after, appended live without a
// reload; the hostile line as text, escaped and redacted, and no script of
// the agent's runs.
func TestLiveConsoleTaskPage(t *testing.T) {
	t.Parallel()
	b := setup(t)
	dir := t.TempDir()
	release, more := filepath.Join(dir, "release"), filepath.Join(dir, "more")
	b.startWorker(worker.Config{Concurrency: 2, Runners: runnersFromConfig(t, liveAgent(t, release, more))})
	const wf = "live-console"
	sub, err := b.nc.SubscribeSync(b.names.LiveSubject(wf, "T1"))
	require.NoError(t, err)
	after := b.submit(task(wf, "T1"))
	for i := 0; i < 2; i++ { // the tool line and the hostile line
		_, err := sub.NextMsg(browserWait)
		require.NoError(t, err)
	}
	u := newConsoleUI(t, b)
	u.openListed("/tasks/" + wf + "/T1")
	u.poll(`document.querySelectorAll("#livelog li").length >= 2`)
	u.do(chromedp.Evaluate[chromedp.Void](`window.__notReloaded = true`))
	require.NoError(t, os.WriteFile(more, nil, 0o600))
	u.poll(`window.droverLive && window.droverLive.received >= 1 && document.getElementById("livelog").textContent.includes("Edit main.go")`)
	require.True(t, evalJS[bool](u, `window.__notReloaded === true`), "appended live, not by a reload")
	u.shot("task-live")

	texts := evalJS[[]string](u, `Array.from(document.querySelectorAll("#livelog li .txt")).map(e => e.textContent)`)
	require.Len(t, texts, 3)
	require.Equal(t, "tool_call: Bash go test ./...", texts[0])
	requireEscaped(t, texts[1])
	require.Equal(t, "tool_call: Edit main.go <img src=x onerror=alert(2)>", texts[2])
	require.Zero(t, evalJS[int](u, `document.querySelectorAll("#livelog script, #livelog img").length`), "the agent's HTML stays text")
	require.Zero(t, u.dialogs.Load(), "no alert ran")
	kinds := evalJS[[]string](u, `Array.from(document.querySelectorAll("#livelog li .tag")).map(e => e.textContent)`)
	require.Equal(t, []string{"implementer#1", "implementer#1", "implementer#1"}, kinds)

	require.Equal(t, "implementer", taskStage(t, b, wf, "T1"), "all this before the role ended")

	require.NoError(t, os.WriteFile(release, nil, 0o600))
	require.Equal(t, subjects.EventTaskCompleted, b.waitTerminal(wf, after, 1)["T1"].EventType)
}

// TestLiveClaudeCode: the real Claude Code CLI, against a scripted fake of
// its model API, shows its tool call live: a follower of `drover task logs`
// sees the Bash call (the key it holds masked) while the command still
// runs, before the role ends.
func TestLiveClaudeCode(t *testing.T) {
	t.Parallel()
	claudeBin := agenttest.CLI(t, "claude")
	b := setup(t)
	dir := t.TempDir()
	release := filepath.Join(dir, "release")
	const key = "sk-ant-live-0123456789"
	impl := agenttest.NewAnthropic(t,
		agenttest.Turn{Tool: "Bash", Input: map[string]any{"command": "echo " + key + " >/dev/null; while [ ! -e " + release + " ]; do sleep 0.05; done; echo released"}, InputTokens: 100, OutputTokens: 10},
		agenttest.Turn{Text: `{"change":"waited for the release"}`, InputTokens: 120, OutputTokens: 10},
	)
	set := runnersFromConfig(t, fmt.Sprintf(`roles:
  planner: {runner: sim}
  judge: {runner: sim}
  implementer:
    agent: claude-code
    exec:
      dir: %q
      env: {PATH: %q, HOME: %q, ANTHROPIC_BASE_URL: %q, ANTHROPIC_API_KEY: %q, ANTHROPIC_MODEL: claude-sonnet-4-5, CLAUDE_CODE_MAX_RETRIES: "0"}
`, dir, agenttest.Path(claudeBin), t.TempDir(), impl.URL, key))
	b.startWorker(worker.Config{Concurrency: 2, Runners: set})
	const wf = "live-claude"
	after := b.submit(task(wf, "T1"))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	out := &watchWriter{want: "tool_call Bash", hits: make(chan struct{}, 16)}
	var stderr cliBuffer
	done := make(chan int, 1)
	go func() {
		done <- cli.Execute(ctx, []string{"--nats-url", b.url, "task", "logs", wf + "/T1", "--follow"}, out, &stderr)
	}()
	select {
	case <-out.hits:
	case <-time.After(90 * time.Second):
		t.Fatalf("no Bash tool call in the output:\n%s\n%s", out.String(), stderr.String())
	}
	text := out.String()
	require.Contains(t, text, `implementer#1 tool_call Bash {"command":"echo [REDACTED] >/dev/null; while`, text)
	require.NotContains(t, text, key)
	require.Equal(t, "implementer", taskStage(t, b, wf, "T1"), "the Bash command still waits: the role has not ended")

	require.NoError(t, os.WriteFile(release, nil, 0o600))
	select {
	case code := <-done:
		require.Equal(t, 0, code, stderr.String())
	case <-time.After(90 * time.Second):
		t.Fatal("logs --follow did not return when the task ended")
	}
	end := b.waitTerminal(wf, after, 1)["T1"]
	require.Equal(t, subjects.EventTaskCompleted, end.EventType, "%s %s", end.Action, end.Error)
	text = out.String()
	require.Contains(t, text, "implementer#1 tool_result released", text)
	require.Contains(t, text, `implementer#1 message {"change":"waited for the release"}`, text)
	t.Logf("drover task logs:\n%s", text)
}

// taskStage reads the task's stage from its state now.
func taskStage(t *testing.T, b *bundle, wf, id string) string {
	t.Helper()
	kv, err := b.js.KeyValue(context.Background(), b.names.StateBucket())
	require.NoError(t, err)
	e, err := kv.Get(context.Background(), subjects.StateKey(wf, id))
	require.NoError(t, err)
	var st subjects.TaskState
	require.NoError(t, json.Unmarshal(e.Value(), &st))
	return st.Stage
}
