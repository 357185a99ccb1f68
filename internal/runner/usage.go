package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
)

// agentUsage reads the usage an agent CLI reports in its output, as a JSON
// result object with "usage" {"input_tokens", "output_tokens"} and/or
// "total_cost_usd" (or "cost_usd"), and optionally "model": the last
// top-level object that has one of them. It returns the metadata entries
// to record ("usage", "cost_usd", "model"), or nil when the output
// reports none. The scan is linear and bounded like ParseOutput's.
func agentUsage(ctx context.Context, text []byte) map[string]any {
	text = bytes.TrimSpace(text)
	if !bytes.Contains(text, []byte(`"usage"`)) && !bytes.Contains(text, []byte(`cost_usd"`)) {
		return nil
	}
	var obj map[string]json.RawMessage
	for _, key := range []string{"usage", "total_cost_usd", "cost_usd"} {
		if o, _, err := findObject(ctx, text, key); err == nil && o != nil {
			obj = o
			break
		}
	}
	if obj == nil {
		return nil
	}
	md := map[string]any{}
	var u struct {
		In  float64 `json:"input_tokens"`
		Out float64 `json:"output_tokens"`
	}
	if raw, ok := obj["usage"]; ok && json.Unmarshal(raw, &u) == nil && sane(u.In) && sane(u.Out) {
		md["usage"] = map[string]any{"input_tokens": int64(u.In), "output_tokens": int64(u.Out)}
	}
	for _, key := range []string{"total_cost_usd", "cost_usd"} {
		var c float64
		if raw, ok := obj[key]; ok && json.Unmarshal(raw, &c) == nil && sane(c) {
			md["cost_usd"] = c
			break
		}
	}
	var model string
	if raw, ok := obj["model"]; ok && json.Unmarshal(raw, &model) == nil && model != "" {
		md["model"] = clipMeta(model)
	}
	if len(md) == 0 {
		return nil
	}
	return md
}

// sane accepts a reported number: finite, not negative, below 1e15.
func sane(f float64) bool { return f >= 0 && f < 1e15 && !math.IsNaN(f) }
