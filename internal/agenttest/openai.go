package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Responses is a fake of the OpenAI Responses API (POST /v1/responses,
// streaming SSE as Codex uses it). The turn of a request is the number of
// the model's answers (tool calls, assistant messages) in its input, so
// the script answers the agent's loop in order, a resumed session too.
// A tool call's Input is sent as the function's JSON arguments. Every
// answer reports its usage (input_tokens counting the cached ones);
// Totals sums them; Meter measures them.
type Responses struct {
	fake
}

// NewResponses starts the fake; it stops when t ends.
func NewResponses(t testing.TB, script ...Turn) *Responses {
	t.Helper()
	f := &Responses{fake: fake{script: script}}
	f.start(t, f.serve)
	return f
}

type responsesBody struct {
	Model string `json:"model"`
	Input []struct {
		Type string `json:"type"`
		Role string `json:"role"`
	} `json:"input"`
	Tools []struct {
		Type string `json:"type"`
		Name string `json:"name"`
	} `json:"tools"`
	PromptCacheKey string `json:"prompt_cache_key"`
}

func (f *Responses) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	if r.Method != http.MethodPost || !strings.HasSuffix(r.URL.Path, "/responses") {
		http.NotFound(w, r)
		return
	}
	var b responsesBody
	if err := json.Unmarshal(body, &b); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"type": "invalid_request_error", "message": err.Error()}})
		return
	}
	rec := Request{Path: r.URL.Path, Model: b.Model, Body: body, Session: r.Header.Get("Session_id"), Messages: len(b.Input)}
	if rec.Session == "" {
		rec.Session = b.PromptCacheKey
	}
	for _, t := range b.Tools {
		rec.Tools = append(rec.Tools, t.Name)
	}
	for _, it := range b.Input {
		if strings.HasSuffix(it.Type, "_call") || it.Type == "message" && it.Role == "assistant" {
			rec.Turn++ // one answer of the model (the fake gives one item each)
		}
	}
	turn := f.turn(body, rec.Turn)
	turn, cached, n := f.record(rec, turn, func() (int64, int64) { return f.meterBody(body, "input", "instructions", "tools") })
	if turn.Status != 0 {
		code := "server_error"
		if turn.Status == http.StatusUnauthorized {
			code = "invalid_api_key"
		}
		writeJSON(w, turn.Status, map[string]any{"error": map[string]any{"type": "invalid_request_error", "code": code, "message": turn.Text}})
		return
	}
	id := fmt.Sprintf("resp_%03d", n)
	var item map[string]any
	if turn.Tool != "" {
		args, _ := json.Marshal(turn.Input)
		item = map[string]any{"type": "function_call", "id": fmt.Sprintf("fc_%03d", n), "call_id": fmt.Sprintf("call_%03d", n),
			"name": turn.Tool, "arguments": string(args), "status": "completed"}
	} else {
		item = map[string]any{"type": "message", "id": fmt.Sprintf("msg_%03d", n), "role": "assistant", "status": "completed",
			"content": []any{map[string]any{"type": "output_text", "text": turn.Text, "annotations": []any{}}}}
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	sse(w, "response.created", map[string]any{"type": "response.created", "response": map[string]any{"id": id, "status": "in_progress", "model": b.Model}})
	sse(w, "response.output_item.added", map[string]any{"type": "response.output_item.added", "output_index": 0, "item": item})
	if turn.Tool == "" {
		sse(w, "response.output_text.delta", map[string]any{"type": "response.output_text.delta", "item_id": item["id"], "output_index": 0, "content_index": 0, "delta": turn.Text})
	}
	sse(w, "response.output_item.done", map[string]any{"type": "response.output_item.done", "output_index": 0, "item": item})
	sse(w, "response.completed", map[string]any{"type": "response.completed", "response": map[string]any{
		"id": id, "status": "completed", "model": b.Model, "output": []any{item},
		"usage": map[string]any{"input_tokens": turn.InputTokens + cached, "input_tokens_details": map[string]any{"cached_tokens": cached},
			"output_tokens": turn.OutputTokens, "output_tokens_details": map[string]any{"reasoning_tokens": 0},
			"total_tokens": turn.InputTokens + cached + turn.OutputTokens},
	}})
}
