package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"time"
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

// codexSessions is where Codex keeps its sessions, relative to HOME (its
// CODEX_HOME unset): one rollout file a thread,
// YYYY/MM/DD/rollout-YYYY-MM-DDThh-mm-ss-<thread id>.jsonl, found by
// `codex exec resume <thread id>` in any day's directory.
const codexSessions = ".codex/sessions"

// maxRolloutWalk bounds the entries findRollout reads: an agent can fill
// its HOME with files.
const maxRolloutWalk = 10000

// findRollout returns the rollout file of thread id under the home that
// root opens, or "" when there is none. It reads at most limit entries and
// follows no symbolic link to a directory.
func findRollout(root *os.Root, id string, limit int) (string, error) {
	if err := validSession(id); err != nil {
		return "", err
	}
	var found string
	n := 0
	err := fs.WalkDir(root.FS(), codexSessions, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if n++; n > limit {
			return fmt.Errorf("more than %d entries under %s", limit, codexSessions)
		}
		// rollout-YYYY-MM-DDThh-mm-ss-<id>.jsonl
		name := d.Name()
		if !d.IsDir() && len(name) == len("rollout-2006-01-02T15-04-05-"+id+".jsonl") &&
			strings.HasPrefix(name, "rollout-") && strings.HasSuffix(name, "-"+id+".jsonl") {
			found = p
			return fs.SkipAll
		}
		return nil
	})
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	return filepath.FromSlash(found), err
}

// codexRolloutFile is where a restored rollout of thread id goes when
// the home has none: the directory and name Codex would give one started
// at t.
func codexRolloutFile(id string, t time.Time) (string, error) {
	if err := validSession(id); err != nil {
		return "", err
	}
	return filepath.Join(filepath.FromSlash(codexSessions), t.Format("2006"), t.Format("01"), t.Format("02"),
		"rollout-"+t.Format("2006-01-02T15-04-05")+"-"+id+".jsonl"), nil
}

// codexThreadUsage is the thread's usage as its rollout file (a kept
// session's state) last recorded it: the last token_count event's
// total_token_usage, in the units of agentReport (input counting the
// cached). ok is false when the state records none.
func codexThreadUsage(ctx context.Context, state []byte) (rep agentReport, ok bool) {
	_ = jsonLines(ctx, state, func(line []byte) {
		var ev struct {
			Type    string `json:"type"`
			Payload struct {
				Type string `json:"type"`
				Info *struct {
					Total *struct {
						Input  float64 `json:"input_tokens"`
						Cached float64 `json:"cached_input_tokens"`
						Output float64 `json:"output_tokens"`
					} `json:"total_token_usage"`
				} `json:"info"`
			} `json:"payload"`
		}
		if json.Unmarshal(line, &ev) != nil || ev.Type != "event_msg" || ev.Payload.Type != "token_count" ||
			ev.Payload.Info == nil || ev.Payload.Info.Total == nil {
			return
		}
		u := ev.Payload.Info.Total
		in, ok1 := tokens(u.Input)
		cached, ok2 := tokens(u.Cached)
		out, ok3 := tokens(u.Output)
		if ok1 && ok2 && ok3 {
			rep, ok = agentReport{InputTokens: in, CacheReadTokens: cached, OutputTokens: out}, true
		}
	})
	return rep, ok
}

// codexOwnUsage keeps the usage in md (agentReport.metadata's), which
// Codex reports for its whole thread, as "session_usage", and for a run
// that resumed session s (nil: none) makes "usage" the run's own, as
// Claude Code's cost is: less the earlier runs' total. Codex adds that
// total from the restored rollout, which the agent could have written,
// so no more than the record's (s's) is taken off, and a count below
// it is left as it is: the ledger may count too much, never too little.
func codexOwnUsage(ctx context.Context, md map[string]any, s *Session) {
	u, ok := md["usage"].(map[string]any)
	if !ok {
		return
	}
	md["session_usage"] = maps.Clone(u)
	if s == nil {
		return
	}
	before, ok := codexThreadUsage(ctx, s.State)
	if !ok {
		return
	}
	for k, b := range map[string]int64{"input_tokens": min(before.InputTokens, s.InputTokens),
		"output_tokens": min(before.OutputTokens, s.OutputTokens), "cache_read_input_tokens": min(before.CacheReadTokens, s.CacheReadTokens)} {
		if v, ok := u[k].(int64); ok && v >= b {
			u[k] = v - b
		}
	}
	if u["cache_read_input_tokens"] == int64(0) {
		delete(u, "cache_read_input_tokens")
	}
}
