package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"strings"
)

// claudeEvent is the part of a Claude Code stream-json event (one JSON
// object a line; --output-format json prints only the result) that Drover
// reads.
type claudeEvent struct {
	Type      string `json:"type"`
	Subtype   string `json:"subtype"`
	SessionID string `json:"session_id"`
	Model     string `json:"model"` // system init
	// result
	IsError        bool     `json:"is_error"`
	Result         *string  `json:"result"`
	Errors         []string `json:"errors"`
	TotalCostUSD   *float64 `json:"total_cost_usd"`
	NumTurns       float64  `json:"num_turns"`
	APIErrorStatus float64  `json:"api_error_status"`
	Usage          *struct {
		Input       float64 `json:"input_tokens"`
		CacheCreate float64 `json:"cache_creation_input_tokens"`
		CacheRead   float64 `json:"cache_read_input_tokens"`
		Output      float64 `json:"output_tokens"`
	} `json:"usage"`
	// assistant
	Message *struct {
		Model string `json:"model"`
	} `json:"message"`
}

// parseClaude reads Claude Code's stream-json (or json, an array of
// the events with --verbose, else the result alone) output: the last
// "result" event gives the answer ("result"), is_error, total_cost_usd,
// usage (input counting cache reads and writes), num_turns and
// session_id; the init event or the assistant messages give the model. An
// error result's message is its "result" or "errors"; an API status of
// 401 or 403 (a refused key) is permanent.
func parseClaude(ctx context.Context, out []byte) (agentReport, error) {
	var rep agentReport
	var model string
	each := jsonLines
	if t := bytes.TrimSpace(out); len(t) > 0 && t[0] == '[' {
		each = jsonArray // --output-format json --verbose: every event in one array
	}
	err := each(ctx, out, func(line []byte) {
		var ev claudeEvent
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		switch ev.Type {
		case "system":
			if ev.Subtype == "init" && ev.Model != "" {
				model = ev.Model
			}
			if ev.SessionID != "" {
				rep.Session = ev.SessionID
			}
		case "assistant":
			if ev.Message != nil && ev.Message.Model != "" && !strings.HasPrefix(ev.Message.Model, "<") {
				model = ev.Message.Model
			}
		case "result":
			rep = claudeResult(ev, rep.Session)
		}
	})
	if err != nil {
		return agentReport{}, err
	}
	rep.Model = model
	return rep, nil
}

func claudeResult(ev claudeEvent, session string) agentReport {
	rep := agentReport{Found: true, Session: session}
	if ev.SessionID != "" {
		rep.Session = ev.SessionID
	}
	if ev.Result != nil {
		rep.Answer = *ev.Result
	}
	if ev.IsError || strings.HasPrefix(ev.Subtype, "error") {
		rep.Error = rep.Answer
		if len(ev.Errors) > 0 {
			rep.Error = strings.Join(ev.Errors, "; ")
		}
		if rep.Error == "" {
			rep.Error = "Claude Code reported " + ev.Subtype
		}
		rep.Permanent = ev.APIErrorStatus == 401 || ev.APIErrorStatus == 403
	}
	if u := ev.Usage; u != nil {
		in, ok1 := tokens(u.Input + u.CacheCreate + u.CacheRead)
		out, ok2 := tokens(u.Output)
		read, _ := tokens(u.CacheRead)
		if ok1 && ok2 {
			rep.InputTokens, rep.OutputTokens, rep.CacheReadTokens, rep.HasUsage = in, out, read, true
		}
	}
	if c := ev.TotalCostUSD; c != nil && sane(*c) {
		rep.CostUSD, rep.HasCost = *c, true
	}
	rep.Turns, _ = tokens(ev.NumTurns)
	return rep
}
