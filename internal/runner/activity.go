package runner

import (
	"bytes"
	"encoding/json"
	"strconv"
	"strings"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

// Activity is one line of what an agent says or does while its role runs:
// an assistant message, a tool call, a tool result's summary, or a line of
// a plain exec agent's stdout. Its text is untrusted: the runner bounds
// it, WithRedact masks the secrets in it, and the receiver escapes it for
// where it shows it (see Request.Activity).
type Activity struct {
	Kind subjects.LiveKind
	// Tool names the tool of a tool call (and of its result, when known).
	Tool string
	Text string
}

// Activity bounds.
const (
	// maxActivityLine bounds one line of stdout the exec runner reads for
	// activity; the rest of a longer line is skipped (the role's output is
	// read whole, as before, from what stdout held).
	maxActivityLine = 256 << 10
	// maxActivityText bounds an Activity's text before redaction: long
	// enough that a secret near subjects.MaxLiveText is masked whole
	// before the publisher cuts the text to that bound.
	maxActivityText = 2 * subjects.MaxLiveText
	// maxActivitySummary bounds a tool call's input and a tool result in
	// their summaries.
	maxActivitySummary = 512
)

// activityDecoder turns one line of an agent CLI's stdout into activity
// lines (none for an event that shows nothing).
type activityDecoder func(line []byte) []Activity

// activityWriter splits what the child writes on stdout into lines as
// they come and hands each to decode, then to emit. It is written by the
// one goroutine that copies stdout, so it needs no lock.
type activityWriter struct {
	decode activityDecoder
	emit   func(Activity)
	line   []byte
	long   bool // the current line passed maxActivityLine: skip to its end
}

func (w *activityWriter) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if !w.long {
			if room := maxActivityLine - len(w.line); len(chunk) > room {
				w.line = append(w.line, chunk[:room]...)
				w.long = true
			} else {
				w.line = append(w.line, chunk...)
			}
		}
		if i < 0 {
			break
		}
		w.flush()
		p = p[i+1:]
	}
	return n, nil
}

// flush hands on the line gathered so far (at the end of a line, and of
// the output).
func (w *activityWriter) flush() {
	line, long := w.line, w.long
	w.line, w.long = w.line[:0], false
	if len(bytes.TrimSpace(line)) == 0 {
		return
	}
	if long && w.decode != nil {
		return // a cut event is not JSON: it shows nothing
	}
	if w.decode == nil {
		w.emit(Activity{Kind: subjects.LiveStdout, Text: clipText(strings.TrimRight(string(line), "\r"), maxActivityText)})
		return
	}
	for _, a := range w.decode(line) {
		a.Text = clipText(a.Text, maxActivityText)
		a.Tool = clipText(a.Tool, 128)
		w.emit(a)
	}
}

// stdoutLine is a preset's line that is not one of its JSON events: it
// shows as stdout.
func stdoutLine(line []byte) []Activity {
	return []Activity{{Kind: subjects.LiveStdout, Text: strings.TrimRight(string(line), "\r")}}
}

// claudeActivity decodes a Claude Code stream-json event: an assistant
// message's text and tool_use blocks, and a user message's tool_result
// blocks.
func claudeActivity(line []byte) []Activity {
	if t := bytes.TrimSpace(line); len(t) == 0 || t[0] != '{' {
		return stdoutLine(line)
	}
	if !bytes.Contains(line, []byte(`"assistant"`)) && !bytes.Contains(line, []byte(`"user"`)) {
		return nil // not a message: skip decoding it (an init event is large)
	}
	var ev struct {
		Type    string `json:"type"`
		Message *struct {
			Content json.RawMessage `json:"content"`
		} `json:"message"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return stdoutLine(line)
	}
	if ev.Message == nil || (ev.Type != "assistant" && ev.Type != "user") {
		return nil
	}
	var blocks []struct {
		Type    string          `json:"type"`
		Text    string          `json:"text"`
		Name    string          `json:"name"`
		Input   json.RawMessage `json:"input"`
		Content json.RawMessage `json:"content"`
		IsError bool            `json:"is_error"`
	}
	if json.Unmarshal(ev.Message.Content, &blocks) != nil {
		return nil // a user prompt as a plain string
	}
	var out []Activity
	for _, b := range blocks {
		switch b.Type {
		case "text":
			if strings.TrimSpace(b.Text) != "" {
				out = append(out, Activity{Kind: subjects.LiveMessage, Text: b.Text})
			}
		case "tool_use":
			out = append(out, Activity{Kind: subjects.LiveToolCall, Tool: b.Name, Text: b.Name + " " + summary(b.Input)})
		case "tool_result":
			text := resultText(b.Content)
			if b.IsError {
				text = "error: " + text
			}
			out = append(out, Activity{Kind: subjects.LiveToolResult, Text: text})
		}
	}
	return out
}

// codexActivity decodes a `codex exec --json` event: agent messages,
// commands started and finished, file changes and MCP tool calls.
func codexActivity(line []byte) []Activity {
	var ev struct {
		Type string `json:"type"`
		Item *struct {
			Type     string          `json:"type"`
			Text     string          `json:"text"`
			Command  string          `json:"command"`
			Output   string          `json:"aggregated_output"`
			ExitCode *int            `json:"exit_code"`
			Changes  json.RawMessage `json:"changes"`
			Server   string          `json:"server"`
			Tool     string          `json:"tool"`
		} `json:"item"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return stdoutLine(line)
	}
	it := ev.Item
	if it == nil {
		return nil
	}
	switch {
	case it.Type == "agent_message" && ev.Type == "item.completed":
		return []Activity{{Kind: subjects.LiveMessage, Text: it.Text}}
	case it.Type == "command_execution" && ev.Type == "item.started":
		return []Activity{{Kind: subjects.LiveToolCall, Tool: "command", Text: "command " + clipText(it.Command, maxActivitySummary)}}
	case it.Type == "command_execution" && ev.Type == "item.completed":
		text := clipText(it.Output, maxActivitySummary)
		if it.ExitCode != nil {
			text = "exit " + strconv.Itoa(*it.ExitCode) + ": " + text
		}
		return []Activity{{Kind: subjects.LiveToolResult, Tool: "command", Text: text}}
	case it.Type == "file_change" && ev.Type == "item.completed":
		return []Activity{{Kind: subjects.LiveToolCall, Tool: "file_change", Text: "file_change " + summary(it.Changes)}}
	case it.Type == "mcp_tool_call" && ev.Type == "item.started":
		return []Activity{{Kind: subjects.LiveToolCall, Tool: it.Tool, Text: it.Server + "." + it.Tool}}
	}
	return nil
}

// opencodeActivity decodes an `opencode run --format json` event: text
// parts and tool uses.
func opencodeActivity(line []byte) []Activity {
	var ev struct {
		Type string `json:"type"`
		Part *struct {
			Text  string `json:"text"`
			Tool  string `json:"tool"`
			State *struct {
				Input  json.RawMessage `json:"input"`
				Output string          `json:"output"`
			} `json:"state"`
		} `json:"part"`
	}
	if json.Unmarshal(line, &ev) != nil {
		return stdoutLine(line)
	}
	p := ev.Part
	switch {
	case p == nil:
		return nil
	case ev.Type == "text" && strings.TrimSpace(p.Text) != "":
		return []Activity{{Kind: subjects.LiveMessage, Text: p.Text}}
	case ev.Type == "tool_use":
		out := []Activity{{Kind: subjects.LiveToolCall, Tool: p.Tool, Text: p.Tool}}
		if p.State != nil {
			out[0].Text += " " + summary(p.State.Input)
			if p.State.Output != "" {
				out = append(out, Activity{Kind: subjects.LiveToolResult, Tool: p.Tool, Text: clipText(p.State.Output, maxActivitySummary)})
			}
		}
		return out
	}
	return nil
}

// summary is a tool input's compact JSON, bounded.
func summary(raw json.RawMessage) string {
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return ""
	}
	return clipText(buf.String(), maxActivitySummary)
}

// resultText is a tool result's text: a string, or the text blocks of a
// list, bounded.
func resultText(raw json.RawMessage) string {
	var s string
	if json.Unmarshal(raw, &s) == nil {
		return clipText(s, maxActivitySummary)
	}
	var blocks []struct {
		Text string `json:"text"`
	}
	if json.Unmarshal(raw, &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, bl := range blocks {
		if b.Len() > maxActivitySummary {
			break
		}
		b.WriteString(bl.Text)
	}
	return clipText(b.String(), maxActivitySummary)
}

// clipText cuts s to at most max bytes at a rune boundary, marking a cut
// with "…".
func clipText(s string, max int) string {
	if len(s) <= max {
		return s
	}
	return redact.Cut(s, max-len("…")) + "…"
}

// LiveText makes an activity text fit a live line: control characters
// but newline and tab escaped (redact.Terminal), invalid UTF-8 replaced,
// and cut to subjects.MaxLiveText. Run it after redaction, so no cut
// leaves part of a secret unmasked.
func LiveText(s string) string {
	return clipText(redact.Terminal(s), subjects.MaxLiveText)
}

// noActivity is the decoder of a CLI that shows nothing while it runs.
func noActivity([]byte) []Activity { return nil }
