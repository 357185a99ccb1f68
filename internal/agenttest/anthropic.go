// Package agenttest is test support only: in-process fakes of the model APIs
// the real agent CLIs call (the Anthropic Messages API for Claude Code, the
// OpenAI Responses API for Codex, the Gemini API for Gemini CLI), scripted
// turn by turn, and a finder for
// the CLIs CI installs. Only tests import it.
package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Turn is one scripted answer of the model: a tool call, or final text.
type Turn struct {
	// Tool and Input: a call of the CLI's tool Tool with arguments Input
	// (Claude Code: Write {file_path, content}, Bash {command}).
	Tool  string
	Input map[string]any
	// Text is the final answer, when Tool is empty.
	Text string
	// InputTokens and OutputTokens are the usage the fake reports.
	InputTokens, OutputTokens int64
	// Status, when not 0, answers with this HTTP status and an API error
	// whose message is Text instead.
	Status int
}

// Request is one request the fake received, decoded as far as the tests
// need it.
type Request struct {
	Path    string
	Model   string
	Tools   []string // the names of the tools offered
	Turn    int      // which turn of the script answered it (-1: a side request)
	Session string   // the conversation's ID as the client sent it, if any
	// Messages is the length of the history the request carries
	// (messages, input items, contents): a resumed session sends its
	// earlier conversation.
	Messages int
	Body     []byte
	// The usage the fake reported for it: input tokens not read from the
	// cache, input tokens read from it, output tokens.
	InputTokens, CacheReadTokens, OutputTokens int64
}

// Anthropic is a fake of the Messages API (POST /v1/messages, streaming
// SSE as Claude Code uses it). A request that offers tools is the agent's
// loop: it gets the script's turn numbered by the assistant messages in its
// history, so retries and resumptions answer consistently. A request
// without tools (a title, a summary) gets a short text. Every answer
// reports its usage; Totals sums them.
type Anthropic struct {
	fake
}

// NewAnthropic starts the fake; it stops when t ends.
func NewAnthropic(t testing.TB, script ...Turn) *Anthropic {
	t.Helper()
	f := &Anthropic{fake: fake{script: script}}
	f.start(t, f.serve)
	return f
}

type anthropicBody struct {
	Model    string `json:"model"`
	Stream   bool   `json:"stream"`
	Messages []struct {
		Role string `json:"role"`
	} `json:"messages"`
	Tools []struct {
		Name string `json:"name"`
	} `json:"tools"`
	Metadata struct {
		UserID string `json:"user_id"`
	} `json:"metadata"`
}

func (f *Anthropic) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if r.Method != http.MethodPost || !strings.HasPrefix(r.URL.Path, "/v1/messages") {
		http.NotFound(w, r)
		return
	}
	var b anthropicBody
	if err := json.Unmarshal(body, &b); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"type": "error", "error": map[string]any{"type": "invalid_request_error", "message": err.Error()}})
		return
	}
	if strings.HasSuffix(r.URL.Path, "/count_tokens") {
		writeJSON(w, http.StatusOK, map[string]any{"input_tokens": 10})
		return
	}
	rec := Request{Path: r.URL.Path, Model: b.Model, Turn: -1, Body: body, Session: r.Header.Get("X-Claude-Code-Session-Id"), Messages: len(b.Messages)}
	for _, t := range b.Tools {
		rec.Tools = append(rec.Tools, t.Name)
	}
	turn := Turn{Text: "ok", InputTokens: 5, OutputTokens: 1}
	if len(b.Tools) > 0 {
		n := 0
		for _, m := range b.Messages {
			if m.Role == "assistant" {
				n++
			}
		}
		rec.Turn = n
		turn = f.turn(body, n)
	}
	turn, cacheRead, n := f.record(rec, turn, func() (int64, int64) { return f.meterBody(body, "messages", "system", "tools") })
	if turn.Status != 0 {
		typ := "api_error"
		if turn.Status == http.StatusUnauthorized {
			typ = "authentication_error"
		}
		writeJSON(w, turn.Status, map[string]any{"type": "error", "error": map[string]any{"type": typ, "message": turn.Text}})
		return
	}
	id := fmt.Sprintf("msg_%03d", n)
	var block map[string]any
	var deltas []map[string]any
	stop := "end_turn"
	if turn.Tool != "" {
		input, _ := json.Marshal(turn.Input)
		block = map[string]any{"type": "tool_use", "id": fmt.Sprintf("toolu_%03d", n), "name": turn.Tool, "input": map[string]any{}}
		deltas = []map[string]any{{"type": "input_json_delta", "partial_json": string(input)}}
		stop = "tool_use"
	} else {
		block = map[string]any{"type": "text", "text": ""}
		deltas = []map[string]any{{"type": "text_delta", "text": turn.Text}}
	}
	if !b.Stream {
		content := map[string]any{"type": "text", "text": turn.Text}
		if turn.Tool != "" {
			content = map[string]any{"type": "tool_use", "id": block["id"], "name": turn.Tool, "input": turn.Input}
		}
		writeJSON(w, http.StatusOK, map[string]any{
			"id": id, "type": "message", "role": "assistant", "model": b.Model, "content": []any{content},
			"stop_reason": stop, "stop_sequence": nil,
			"usage": map[string]any{"input_tokens": turn.InputTokens, "output_tokens": turn.OutputTokens, "cache_read_input_tokens": cacheRead},
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Request-Id", "req_"+id)
	w.WriteHeader(http.StatusOK)
	sse(w, "message_start", map[string]any{"type": "message_start", "message": map[string]any{
		"id": id, "type": "message", "role": "assistant", "model": b.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil,
		"usage": map[string]any{"input_tokens": turn.InputTokens, "output_tokens": 1, "cache_creation_input_tokens": 0, "cache_read_input_tokens": cacheRead},
	}})
	sse(w, "content_block_start", map[string]any{"type": "content_block_start", "index": 0, "content_block": block})
	sse(w, "ping", map[string]any{"type": "ping"})
	for _, d := range deltas {
		sse(w, "content_block_delta", map[string]any{"type": "content_block_delta", "index": 0, "delta": d})
	}
	sse(w, "content_block_stop", map[string]any{"type": "content_block_stop", "index": 0})
	sse(w, "message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil},
		"usage": map[string]any{"output_tokens": turn.OutputTokens}})
	sse(w, "message_stop", map[string]any{"type": "message_stop"})
}

// sse writes one server-sent event and flushes it.
func sse(w http.ResponseWriter, event string, data any) {
	b, _ := json.Marshal(data)
	fmt.Fprintf(w, "event: %s\ndata: %s\n\n", event, b)
	if fl, ok := w.(http.Flusher); ok {
		fl.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
