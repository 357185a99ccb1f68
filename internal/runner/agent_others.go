package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"sort"
)

// geminiOutput is Gemini CLI's --output-format json answer: one object.
type geminiOutput struct {
	Response  *string `json:"response"`
	SessionID string  `json:"session_id"`
	Stats     *struct {
		Models map[string]struct {
			Tokens struct {
				Prompt     float64 `json:"prompt"`
				Candidates float64 `json:"candidates"`
				Cached     float64 `json:"cached"`
				Thoughts   float64 `json:"thoughts"`
			} `json:"tokens"`
		} `json:"models"`
	} `json:"stats"`
	Error *struct {
		Type    string  `json:"type"`
		Message string  `json:"message"`
		Code    float64 `json:"code"`
	} `json:"error"`
}

// parseGemini reads Gemini CLI's JSON output (on stdout; on stderr when
// it fails): "response" is the answer,
// "error" the agent's error, and stats.models the tokens of each model
// (prompt counts the cached; candidates and thoughts are output). The
// model recorded is the one with the most prompt tokens. Gemini reports
// no cost.
func parseGemini(ctx context.Context, out []byte) (agentReport, error) {
	var rep agentReport
	text := bytes.TrimSpace(out)
	// Warnings and stack traces may precede the object: it starts at the
	// last line that opens one (its own lines are indented).
	if start := bytes.LastIndex(text, []byte("\n{")); start >= 0 {
		text = text[start+1:]
	}
	var g geminiOutput
	if err := json.Unmarshal(text, &g); err != nil {
		return rep, nil // not Found: the caller reports the missing result
	}
	if ctx.Err() != nil {
		return agentReport{}, ctx.Err()
	}
	if g.Response != nil {
		rep.Found, rep.Answer = true, *g.Response
	}
	rep.Session = g.SessionID
	if g.Error != nil {
		rep.Error = g.Error.Message
		if rep.Error == "" {
			rep.Error = "Gemini CLI reported " + g.Error.Type
		}
		rep.Permanent = g.Error.Code == 401 || g.Error.Code == 403
	}
	if g.Stats != nil && len(g.Stats.Models) > 0 {
		names := make([]string, 0, len(g.Stats.Models))
		var in, cached, output, most float64
		for name, m := range g.Stats.Models {
			names = append(names, name)
			t := m.Tokens
			if !sane(t.Prompt) || !sane(t.Candidates) || !sane(t.Cached) || !sane(t.Thoughts) {
				return rep, nil
			}
			in, cached, output = in+t.Prompt, cached+t.Cached, output+t.Candidates+t.Thoughts
		}
		sort.Strings(names)
		for _, name := range names {
			if p := g.Stats.Models[name].Tokens.Prompt; p > most || rep.Model == "" {
				most, rep.Model = p, name
			}
		}
		rep.InputTokens, _ = tokens(in)
		rep.CacheReadTokens, _ = tokens(cached)
		rep.OutputTokens, _ = tokens(output)
		rep.HasUsage = true
	}
	return rep, nil
}

// opencodeEvent is the part of an `opencode run --format json` event
// (JSONL) that Drover reads.
type opencodeEvent struct {
	Type      string `json:"type"`
	SessionID string `json:"sessionID"`
	Part      *struct {
		Type   string   `json:"type"`
		Text   string   `json:"text"`
		Reason string   `json:"reason"`
		Cost   *float64 `json:"cost"`
		Tokens *struct {
			Input  float64 `json:"input"`
			Output float64 `json:"output"`
			Reason float64 `json:"reasoning"`
			Cache  struct {
				Read  float64 `json:"read"`
				Write float64 `json:"write"`
			} `json:"cache"`
		} `json:"tokens"`
	} `json:"part"`
	Error *struct {
		Name string `json:"name"`
		Data struct {
			Message string `json:"message"`
		} `json:"data"`
		Message string `json:"message"`
	} `json:"error"`
}

// parseOpencode reads `opencode run --format json`: the text of the last
// step is the answer, each step_finish adds its tokens and cost, and an
// error event gives the error. The run is complete when the last
// step_finish's reason is not tool-calls.
func parseOpencode(ctx context.Context, out []byte) (agentReport, error) {
	var rep agentReport
	var in, cached, output, cost float64
	var text bytes.Buffer
	err := jsonLines(ctx, out, func(line []byte) {
		var ev opencodeEvent
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		if ev.SessionID != "" {
			rep.Session = ev.SessionID
		}
		switch {
		case ev.Type == "step_start":
			text.Reset()
		case ev.Type == "text" && ev.Part != nil:
			text.WriteString(ev.Part.Text)
		case ev.Type == "step_finish" && ev.Part != nil:
			rep.Turns++
			rep.Found = ev.Part.Reason != "tool-calls"
			if t := ev.Part.Tokens; t != nil && sane(t.Input) && sane(t.Output) && sane(t.Reason) && sane(t.Cache.Read) && sane(t.Cache.Write) {
				in += t.Input + t.Cache.Read + t.Cache.Write
				cached += t.Cache.Read
				output += t.Output + t.Reason
				rep.HasUsage = true
			}
			if c := ev.Part.Cost; c != nil && sane(*c) {
				cost += *c
				rep.HasCost = true
			}
		case ev.Type == "error" && ev.Error != nil:
			rep.Error = ev.Error.Data.Message
			if rep.Error == "" {
				rep.Error = ev.Error.Message
			}
			if rep.Error == "" {
				rep.Error = "opencode reported " + ev.Error.Name
			}
		}
	})
	if err != nil {
		return agentReport{}, err
	}
	rep.Answer = text.String()
	rep.InputTokens, _ = tokens(in)
	rep.CacheReadTokens, _ = tokens(cached)
	rep.OutputTokens, _ = tokens(output)
	rep.CostUSD = cost
	return rep, nil
}
