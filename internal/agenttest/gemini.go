package agenttest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"
)

// Gemini is a fake of the Gemini API (POST
// /v1beta/models/<model>:streamGenerateContent?alt=sse and
// :generateContent, as Gemini CLI calls it). A request that declares
// tools is the agent's loop: its turn is the number of model contents in
// its history. Any other request (the CLI's own checks) gets a short JSON
// text. A tool call's Input is the function call's args. Meter measures
// the agent's loop's usage as the API's implicit cache of a repeated
// prefix reports it (cachedContentTokenCount, counted in
// promptTokenCount).
type Gemini struct {
	fake
}

// NewGemini starts the fake; it stops when t ends.
func NewGemini(t testing.TB, script ...Turn) *Gemini {
	t.Helper()
	f := &Gemini{fake: fake{script: script}}
	f.start(t, f.serve)
	return f
}

type geminiBody struct {
	Contents []struct {
		Role  string `json:"role"`
		Parts []struct {
			FunctionCall     json.RawMessage `json:"functionCall"`
			FunctionResponse json.RawMessage `json:"functionResponse"`
		} `json:"parts"`
	} `json:"contents"`
	Tools []struct {
		FunctionDeclarations []struct {
			Name string `json:"name"`
		} `json:"functionDeclarations"`
	} `json:"tools"`
}

func (f *Gemini) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(io.LimitReader(r.Body, 64<<20))
	path := r.URL.Path
	i := strings.LastIndex(path, ":")
	if r.Method != http.MethodPost || i < 0 || !strings.Contains(path, "/models/") {
		http.NotFound(w, r)
		return
	}
	model, method := path[strings.LastIndex(path[:i], "/")+1:i], path[i+1:]
	if method == "countTokens" {
		writeJSON(w, http.StatusOK, map[string]any{"totalTokens": 10})
		return
	}
	var b geminiBody
	if err := json.Unmarshal(body, &b); err != nil {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"code": 400, "message": err.Error(), "status": "INVALID_ARGUMENT"}})
		return
	}
	rec := Request{Path: path, Model: model, Turn: -1, Body: body, Messages: len(b.Contents)}
	for _, t := range b.Tools {
		for _, d := range t.FunctionDeclarations {
			rec.Tools = append(rec.Tools, d.Name)
		}
	}
	if msg := b.unanswered(); msg != "" {
		writeJSON(w, http.StatusBadRequest, map[string]any{"error": map[string]any{"code": 400, "message": msg, "status": "INVALID_ARGUMENT"}})
		return
	}
	// The CLI's checks: its next-speaker check and its model router.
	turn := Turn{Text: `{"reasoning":"done","next_speaker":"user","complexity_reasoning":"simple","complexity_score":1}`, InputTokens: 5, OutputTokens: 1}
	if len(rec.Tools) > 0 {
		rec.Turn = 0
		for _, c := range b.Contents {
			if c.Role == "model" {
				rec.Turn++
			}
		}
		turn = f.turn(body, rec.Turn)
	}
	var meter func() (int64, int64)
	if rec.Turn >= 0 { // the CLI's own checks are not metered
		meter = func() (int64, int64) { return f.meterBody(body, "contents", "systemInstruction", "tools") }
	}
	turn, cached, _ := f.record(rec, turn, meter)
	if turn.Status != 0 {
		writeJSON(w, turn.Status, map[string]any{"error": map[string]any{"code": turn.Status, "message": turn.Text, "status": "UNAUTHENTICATED"}})
		return
	}
	part := map[string]any{"text": turn.Text}
	if turn.Tool != "" {
		part = map[string]any{"functionCall": map[string]any{"name": turn.Tool, "args": turn.Input}}
	}
	resp := map[string]any{
		"candidates": []any{map[string]any{"content": map[string]any{"role": "model", "parts": []any{part}}, "finishReason": "STOP", "index": 0}},
		"usageMetadata": map[string]any{"promptTokenCount": turn.InputTokens + cached, "cachedContentTokenCount": cached,
			"candidatesTokenCount": turn.OutputTokens, "totalTokenCount": turn.InputTokens + cached + turn.OutputTokens},
		"modelVersion": model,
	}
	if method != "streamGenerateContent" {
		writeJSON(w, http.StatusOK, resp)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	b2, _ := json.Marshal(resp)
	fmt.Fprintf(w, "data: %s\r\n\r\n", b2)
}

// unanswered is the API's refusal of a history where a model content's
// function calls are not answered by as many function responses in the
// next content, or "".
func (b geminiBody) unanswered() string {
	count := func(i int, call bool) (n int) {
		for _, p := range b.Contents[i].Parts {
			if call && p.FunctionCall != nil || !call && p.FunctionResponse != nil {
				n++
			}
		}
		return n
	}
	for i := range b.Contents {
		calls := count(i, true)
		if calls == 0 || i+1 == len(b.Contents) {
			continue
		}
		if count(i+1, false) != calls {
			return "Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn."
		}
	}
	return ""
}
