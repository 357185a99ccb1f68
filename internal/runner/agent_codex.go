package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
)

// codexEvent is the part of a `codex exec --json` event (JSONL) that
// Drover reads.
type codexEvent struct {
	Type     string `json:"type"`
	ThreadID string `json:"thread_id"` // thread.started
	Message  string `json:"message"`   // error
	Item     *struct {
		Type string `json:"type"`
		Text string `json:"text"`
	} `json:"item"` // item.completed
	Usage *struct {
		Input  float64 `json:"input_tokens"`
		Cached float64 `json:"cached_input_tokens"`
		Output float64 `json:"output_tokens"`
	} `json:"usage"` // turn.completed
	Error *struct {
		Message string `json:"message"`
	} `json:"error"` // turn.failed
}

// parseCodex reads `codex exec --json`: thread.started gives the session
// (thread_id); the last item.completed of type agent_message is the
// answer; each turn.completed adds its usage (input_tokens counts the
// cached ones, as OpenAI's do); turn.failed gives the error, else the
// last error event when no turn completed (one that did recovered from
// it) (a 401 or 403 is permanent). Codex reports no cost: the ledger prices its tokens.
func parseCodex(ctx context.Context, out []byte) (agentReport, error) {
	var rep agentReport
	var in, cached, output float64
	var lastErr string
	err := jsonLines(ctx, out, func(line []byte) {
		var ev codexEvent
		if json.Unmarshal(line, &ev) != nil {
			return
		}
		switch ev.Type {
		case "thread.started":
			rep.Session = ev.ThreadID
		case "item.completed":
			if ev.Item != nil && ev.Item.Type == "agent_message" {
				rep.Answer = ev.Item.Text
			}
		case "turn.completed":
			rep.Found = true
			rep.Turns++
			if u := ev.Usage; u != nil && sane(u.Input) && sane(u.Cached) && sane(u.Output) {
				in, cached, output = in+u.Input, cached+u.Cached, output+u.Output
				rep.HasUsage = true
			}
		case "turn.failed":
			if ev.Error != nil && ev.Error.Message != "" {
				rep.Error = ev.Error.Message
			} else {
				rep.Error = "codex reported a failed turn"
			}
		case "error": // also a transient "Reconnecting... 2/5"
			if ev.Message != "" {
				lastErr = ev.Message
			}
		}
	})
	if err != nil {
		return agentReport{}, err
	}
	if rep.Error == "" && !rep.Found {
		rep.Error = lastErr
	}
	// Its message for a refused key: "unexpected status 401 Unauthorized: ...".
	rep.Permanent = strings.Contains(rep.Error, "status 401 ") || strings.Contains(rep.Error, "status 403 ")
	if rep.HasUsage {
		rep.InputTokens, _ = tokens(in)
		rep.CacheReadTokens, _ = tokens(cached)
		rep.OutputTokens, _ = tokens(output)
	}
	return rep, nil
}

// codexModel is the model Codex runs, which its events do not name: the
// argv's -m/--model or -c model=..., else the top-level model key of
// config.toml in the child's CODEX_HOME (default $HOME/.codex); "" when
// neither says.
func codexModel(argv []string, env map[string]string) string {
	for i, a := range argv {
		next := ""
		if i+1 < len(argv) {
			next = argv[i+1]
		}
		switch {
		case a == "-m" || a == "--model":
			return next
		case strings.HasPrefix(a, "--model="):
			return strings.TrimPrefix(a, "--model=")
		case (a == "-c" || a == "--config") && strings.HasPrefix(next, "model="):
			return strings.Trim(strings.TrimPrefix(next, "model="), `"'`)
		}
	}
	home := env["CODEX_HOME"]
	if home == "" && env["HOME"] != "" {
		home = filepath.Join(env["HOME"], ".codex")
	}
	if home == "" {
		return ""
	}
	f, err := os.Open(filepath.Join(home, "config.toml"))
	if err != nil {
		return ""
	}
	defer func() { _ = f.Close() }() // read only
	sc := bufio.NewScanner(io.LimitReader(f, 1<<20))
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if strings.HasPrefix(line, "[") {
			return "" // past the top-level keys
		}
		k, v, ok := strings.Cut(line, "=")
		if ok && strings.TrimSpace(k) == "model" {
			v = strings.TrimSpace(v)
			if i := strings.Index(v, " #"); i >= 0 {
				v = strings.TrimSpace(v[:i])
			}
			return strings.Trim(v, `"'`)
		}
	}
	return ""
}
