package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"unicode"

	"github.com/droverhq/drover/internal/redact"
)

// agentReport is what an agent CLI's output says about its run.
type agentReport struct {
	// Found: the output had the CLI's final result (Claude Code's result
	// event, Codex's completed turn, ...).
	Found bool
	// Answer is the agent's final message.
	Answer string
	// Error is the agent's own error message, when it reports one;
	// Permanent says no retry can fix it (a refused key).
	Error     string
	Permanent bool
	// Usage: tokens, input counting cached reads and writes.
	InputTokens, OutputTokens int64
	CacheReadTokens           int64
	HasUsage                  bool
	CostUSD                   float64
	HasCost                   bool
	Model                     string
	Session                   string
	Turns                     int64
}

// metadata is what the report adds to the role's result.
func (r agentReport) metadata(agent string) map[string]any {
	md := map[string]any{"agent": agent}
	if r.HasUsage {
		u := map[string]any{"input_tokens": r.InputTokens, "output_tokens": r.OutputTokens}
		if r.CacheReadTokens > 0 {
			u["cache_read_input_tokens"] = r.CacheReadTokens
		}
		md["usage"] = u
	}
	if r.HasCost {
		md["cost_usd"] = r.CostUSD
	}
	if r.Model != "" {
		md["model"] = clipMeta(r.Model)
	}
	if r.Session != "" {
		md["session_id"] = clipMeta(r.Session)
	}
	if r.Turns > 0 {
		md["num_turns"] = r.Turns
	}
	return md
}

// agentResult turns a preset agent's stdout into the role's result: its
// final message parsed as the role's answer, its usage and session in the
// metadata. exitErr is the process's exit error, if any: an agent that
// exited non-zero or reported an error fails the role with its own
// message (bounded, control characters removed; WithRedact masks the
// secrets); one whose key was refused fails it for good.
func (e *Exec) agentResult(ctx context.Context, out []byte, exitErr error, stderr string) (Result, error) {
	name := e.cfg.Argv[0]
	p := agentPresets[e.cfg.Agent]
	rep, perr := p.parse(ctx, out)
	if errors.Is(exitErr, exec.ErrWaitDelay) {
		exitErr = nil // it exited 0; a process it left held stdout
	}
	if p.errOnStderr && perr == nil && exitErr != nil && rep.Error == "" && !rep.Found {
		if r, err := p.parse(ctx, []byte(stderr)); err == nil && r.Error != "" {
			rep.Error, rep.Permanent = r.Error, r.Permanent
		}
	}
	switch {
	case perr != nil && exitErr == nil:
		return Result{}, fmt.Errorf("exec %s: %s output: %w%s", name, e.cfg.Agent, perr, stderr)
	case rep.Error != "" || exitErr != nil:
		msg := agentMessage(rep.Error)
		if msg == "" && exitErr != nil {
			msg = agentMessage(rep.Answer) // a CLI that prints its error as its answer
		}
		if msg == "" && exitErr != nil && !rep.Found {
			msg = agentMessage(lastText(out)) // one that printed plain text
		}
		err := errors.New("agent reported an error")
		if exitErr != nil {
			err = exitErr
		}
		if rep.Permanent {
			err = Permanentf("%w", err)
		}
		if msg != "" {
			return Result{}, fmt.Errorf("exec %s: %w: %s%s", name, err, msg, stderr)
		}
		return Result{}, fmt.Errorf("exec %s: %w%s", name, err, stderr)
	case !rep.Found:
		return Result{}, fmt.Errorf("exec %s: %s output has no final result%s", name, e.cfg.Agent, stderr)
	}
	if rep.Model == "" && p.model != nil {
		rep.Model = p.model(e.cfg.Argv, e.baseEnv())
	}
	res, err := ParseOutput(ctx, e.role, []byte(rep.Answer))
	if err != nil {
		return Result{}, fmt.Errorf("exec %s: %s's answer: %w", name, e.cfg.Agent, err)
	}
	if res.Metadata == nil {
		res.Metadata = map[string]any{}
	}
	for k, v := range rep.metadata(e.cfg.Agent) {
		res.Metadata[k] = v
	}
	return res, nil
}

// agentMessage is an agent's error text for the record: valid UTF-8,
// control characters (terminal escapes included) as spaces, at most
// maxAgentErrorBytes.
func agentMessage(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s)
	return redact.Clip(strings.TrimSpace(s), maxAgentErrorBytes, "…[truncated]")
}

// lastText is the end of out, at most maxAgentErrorBytes, from a line
// start when there is one in it.
func lastText(out []byte) string {
	out = bytes.TrimSpace(out)
	if len(out) > maxAgentErrorBytes {
		out = out[len(out)-maxAgentErrorBytes:]
		if i := bytes.IndexByte(out, '\n'); i >= 0 {
			out = out[i+1:]
		}
	}
	return string(out)
}

// jsonLines calls fn with each line of out that looks like a JSON object,
// stopping with ctx's error when ctx ends. One pass over out.
func jsonLines(ctx context.Context, out []byte, fn func(line []byte)) error {
	for i := 0; len(out) > 0; i++ {
		if i%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		line := out
		if n := bytes.IndexByte(out, '\n'); n >= 0 {
			line, out = out[:n], out[n+1:]
		} else {
			out = nil
		}
		line = bytes.TrimSpace(line)
		if len(line) > 1 && line[0] == '{' {
			fn(line)
		}
	}
	return nil
}

// jsonArray calls fn with each object of the JSON array out, stopping
// with ctx's error when ctx ends. An output that is not an array of
// objects calls fn for none.
func jsonArray(ctx context.Context, out []byte, fn func(obj []byte)) error {
	var items []json.RawMessage
	if json.Unmarshal(out, &items) != nil {
		return nil
	}
	for i, it := range items {
		if i%256 == 0 && ctx.Err() != nil {
			return ctx.Err()
		}
		if len(it) > 0 && it[0] == '{' {
			fn(it)
		}
	}
	return nil
}

// tokens accepts a reported token count: finite, not negative.
func tokens(f float64) (int64, bool) {
	if !sane(f) {
		return 0, false
	}
	return int64(f), true
}
