//go:build unix

package runner

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

// activityLog gathers a run's Activity calls.
type activityLog struct {
	mu    sync.Mutex
	lines []Activity
}

func (l *activityLog) add(a Activity) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.lines = append(l.lines, a)
}

func (l *activityLog) all() []Activity {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]Activity(nil), l.lines...)
}

// TestActivityClaude: a Claude Code run's tool calls, results and
// messages reach Request.Activity, and the result is read as before.
func TestActivityClaude(t *testing.T) {
	t.Parallel()
	out, err := filepath.Abs(filepath.Join("testdata", "agents", "claude_success.jsonl"))
	require.NoError(t, err)
	e := agentExec(t, subjects.RoleImplementer, AgentClaudeCode, map[string]string{"AGENT_OUT": out})
	var log activityLog
	req := simReq(t, subjects.RoleImplementer, "")
	req.Activity = log.add
	res, err := e.Run(context.Background(), req)
	require.NoError(t, err)
	require.JSONEq(t, `{"change":"wrote hello.txt"}`, string(res.Output), "the result is read as before")
	got := log.all()
	require.Len(t, got, 5, "%+v", got)
	require.Equal(t, Activity{Kind: subjects.LiveToolCall, Tool: "Write",
		Text: `Write {"file_path":"/srv/checkout1/hello.txt","content":"hi\n"}`}, got[0])
	require.Equal(t, subjects.LiveToolResult, got[1].Kind)
	require.Contains(t, got[1].Text, "File created successfully")
	require.Equal(t, Activity{Kind: subjects.LiveToolCall, Tool: "Bash",
		Text: `Bash {"command":"echo ran > ran.txt","description":"run"}`}, got[2])
	require.Equal(t, Activity{Kind: subjects.LiveMessage, Text: `{"change":"wrote hello.txt"}`}, got[4])
}

// TestActivityPlainRedacted: a plain exec agent's stdout lines arrive one
// by one, through WithRedact with the secret masked; LiveText escapes the
// terminal sequences and bounds the text.
func TestActivityPlainRedacted(t *testing.T) {
	t.Parallel()
	const secret = "sk-live-0123456789abcdef"
	e := newExec(t, subjects.RoleImplementer, ExecConfig{Argv: []string{"/bin/sh", "-c",
		`printf 'first\n<script>alert(1)</script> \033[31mred ` + secret + `\n'; printf 'no newline'; printf '{"change":"ok"}' >&2`}})
	r := Chain(e, WithRedact(redact.New(secret)))
	var log activityLog
	req := simReq(t, subjects.RoleImplementer, "")
	req.Activity = log.add
	_, _ = r.Run(context.Background(), req) // the output is not the point here
	got := log.all()
	require.Len(t, got, 3, "%+v", got)
	require.Equal(t, Activity{Kind: subjects.LiveStdout, Text: "first"}, got[0])
	require.NotContains(t, got[1].Text, secret, "masked by WithRedact")
	require.Equal(t, `<script>alert(1)</script> \x1b[31mred [REDACTED]`, LiveText(got[1].Text))
	require.Equal(t, "no newline", got[2].Text, "the last line without its newline")

	long := LiveText(strings.Repeat("é", subjects.MaxLiveText))
	require.LessOrEqual(t, len(long), subjects.MaxLiveText)
	require.True(t, strings.HasSuffix(long, "…"))
}

// TestActivityWriterLongLine: a line past maxActivityLine is cut, and the
// next line is read whole.
func TestActivityWriterLongLine(t *testing.T) {
	t.Parallel()
	var log activityLog
	w := &activityWriter{emit: log.add}
	_, _ = w.Write([]byte(strings.Repeat("x", maxActivityLine+10)))
	_, _ = w.Write([]byte("yy\nnext\n"))
	got := log.all()
	require.Len(t, got, 2)
	require.LessOrEqual(t, len(got[0].Text), maxActivityText)
	require.Equal(t, "next", got[1].Text)

	log = activityLog{}
	w = &activityWriter{decode: claudeActivity, emit: log.add}
	_, _ = w.Write([]byte(`{"type":"assistant","message":{"content":[{"type":"text","text":"` + strings.Repeat("x", maxActivityLine) + "\"}]}}\n"))
	require.Empty(t, log.all(), "a cut event shows nothing")
}

// TestActivityDecoders: each preset's events become the activity lines a
// reader expects; events that show nothing give none, and a line that is
// not JSON shows as stdout.
func TestActivityDecoders(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		decode activityDecoder
		line   string
		want   []Activity
	}{
		{"claude text", claudeActivity, `{"type":"assistant","message":{"content":[{"type":"text","text":"Reading."}]}}`,
			[]Activity{{Kind: subjects.LiveMessage, Text: "Reading."}}},
		{"claude result blocks, error", claudeActivity, `{"type":"user","message":{"content":[{"type":"tool_result","content":[{"type":"text","text":"no such file"}],"is_error":true}]}}`,
			[]Activity{{Kind: subjects.LiveToolResult, Text: "error: no such file"}}},
		{"claude user prompt", claudeActivity, `{"type":"user","message":{"content":"the prompt"}}`, nil},
		{"claude init", claudeActivity, `{"type":"system","subtype":"init","model":"m"}`, nil},
		{"claude not JSON", claudeActivity, `npm warn something`, []Activity{{Kind: subjects.LiveStdout, Text: "npm warn something"}}},
		{"codex message", codexActivity, `{"type":"item.completed","item":{"type":"agent_message","text":"Done."}}`,
			[]Activity{{Kind: subjects.LiveMessage, Text: "Done."}}},
		{"codex command", codexActivity, `{"type":"item.started","item":{"type":"command_execution","command":"go test ./..."}}`,
			[]Activity{{Kind: subjects.LiveToolCall, Tool: "command", Text: "command go test ./..."}}},
		{"codex command done", codexActivity, `{"type":"item.completed","item":{"type":"command_execution","command":"go test","aggregated_output":"ok","exit_code":0}}`,
			[]Activity{{Kind: subjects.LiveToolResult, Tool: "command", Text: "exit 0: ok"}}},
		{"codex file change", codexActivity, `{"type":"item.completed","item":{"type":"file_change","changes":[{"path":"a.go","kind":"add"}]}}`,
			[]Activity{{Kind: subjects.LiveToolCall, Tool: "file_change", Text: `file_change [{"path":"a.go","kind":"add"}]`}}},
		{"codex turn", codexActivity, `{"type":"turn.completed","usage":{"input_tokens":1}}`, nil},
		{"opencode text", opencodeActivity, `{"type":"text","part":{"text":"Hi"}}`, []Activity{{Kind: subjects.LiveMessage, Text: "Hi"}}},
		{"opencode tool", opencodeActivity, `{"type":"tool_use","part":{"tool":"bash","state":{"input":{"command":"ls"},"output":"a.go"}}}`,
			[]Activity{{Kind: subjects.LiveToolCall, Tool: "bash", Text: `bash {"command":"ls"}`}, {Kind: subjects.LiveToolResult, Tool: "bash", Text: "a.go"}}},
		{"gemini", noActivity, `{"response":"x"}`, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			require.Equal(t, tc.want, tc.decode([]byte(tc.line)))
		})
	}
}

// BenchmarkActivityClaude measures reading a Claude Code stream for live
// activity, as the exec runner does alongside its stdout buffer.
func BenchmarkActivityClaude(b *testing.B) {
	one, err := os.ReadFile(filepath.Join("testdata", "agents", "claude_success.jsonl"))
	require.NoError(b, err)
	out := bytes.Repeat(one, 200)
	b.SetBytes(int64(len(out)))
	var n int
	for b.Loop() {
		w := &activityWriter{decode: claudeActivity, emit: func(Activity) { n++ }}
		for chunk := out; len(chunk) > 0; {
			k := min(32<<10, len(chunk)) // pipe-sized writes
			_, _ = w.Write(chunk[:k])
			chunk = chunk[k:]
		}
		w.flush()
	}
}
