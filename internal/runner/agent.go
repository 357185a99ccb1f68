package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"unicode"

	"github.com/droverhq/drover/internal/redact"
)

// Agent presets: ExecConfig.Agent names the agent CLI an exec runner
// starts, and the preset knows its non-interactive mode, its structured
// output, the permission mode that lets it edit files and run commands,
// and the variables it needs.
const (
	AgentClaudeCode = "claude-code"
	AgentCodex      = "codex"
	AgentGemini     = "gemini"
	AgentOpencode   = "opencode"
)

// Agents lists the preset names.
var Agents = []string{AgentClaudeCode, AgentCodex, AgentGemini, AgentOpencode}

// proxyEnv are the proxy and certificate variables every preset passes.
var proxyEnv = []string{"HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "http_proxy", "https_proxy", "no_proxy",
	"SSL_CERT_FILE", "SSL_CERT_DIR", "NODE_EXTRA_CA_CERTS"}

// ProxyEnv names the proxy variables a preset passes through; their
// values may hold credentials in the URL.
func ProxyEnv() []string { return slices.Clone(proxyEnv[:6]) }

// maxAgentOutputBytes is a preset's default stdout bound: a streaming
// agent echoes every tool result, so a long session writes far more than
// the 4 MiB a plain exec answer gets.
const maxAgentOutputBytes = 64 << 20

// maxAgentErrorBytes bounds the agent's own error message in the role's
// error.
const maxAgentErrorBytes = 1 << 10

// agentPreset is one agent CLI.
type agentPreset struct {
	// argv is the default command: the CLI in its non-interactive mode,
	// reading the prompt from stdin, writing structured events to stdout,
	// with the permissions to edit and run commands (Drover's sandbox
	// contains it).
	argv []string
	// env is set in the child's environment under the role's own env.
	env map[string]string
	// inherit are the variables passed through when the role names none:
	// DefaultInherit, the CLI's credentials, endpoint and provider
	// switches, and the proxies.
	inherit []string
	// parse reads the CLI's stdout.
	parse func(ctx context.Context, out []byte) (agentReport, error)
	// errOnStderr: the CLI prints its failure's report on stderr, which
	// parse then reads when stdout has none.
	errOnStderr bool
	// model, when set, names the model from the argv and the child's
	// environment, for a CLI whose output does not.
	model func(argv []string, env map[string]string) string
}

var agentPresets = map[string]agentPreset{
	AgentClaudeCode: {
		// stream-json needs --verbose with -p. bypassPermissions lets it
		// run the tests; as root it refuses without IS_SANDBOX=1.
		argv: []string{"claude", "-p", "--output-format", "stream-json", "--verbose", "--permission-mode", "bypassPermissions"},
		env:  map[string]string{"IS_SANDBOX": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"},
		inherit: []string{"ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL", "ANTHROPIC_CUSTOM_HEADERS",
			"ANTHROPIC_MODEL", "ANTHROPIC_SMALL_FAST_MODEL", "ANTHROPIC_DEFAULT_OPUS_MODEL", "ANTHROPIC_DEFAULT_SONNET_MODEL",
			"ANTHROPIC_DEFAULT_HAIKU_MODEL", "CLAUDE_CODE_OAUTH_TOKEN", "CLAUDE_CONFIG_DIR", "CLAUDE_CODE_MAX_RETRIES", "API_TIMEOUT_MS",
			"CLAUDE_CODE_USE_BEDROCK", "ANTHROPIC_BEDROCK_BASE_URL", "AWS_REGION", "AWS_PROFILE", "AWS_ACCESS_KEY_ID",
			"AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK",
			"CLAUDE_CODE_USE_VERTEX", "ANTHROPIC_VERTEX_PROJECT_ID", "ANTHROPIC_VERTEX_BASE_URL", "CLOUD_ML_REGION",
			"GOOGLE_APPLICATION_CREDENTIALS"},
		parse: parseClaude,
	},
	AgentCodex: {
		// Drover's sandbox contains it, so codex's own (which needs
		// namespaces the sandbox does not give) is off.
		argv: []string{"codex", "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-"},
		inherit: []string{"OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORGANIZATION", "OPENAI_PROJECT",
			"CODEX_HOME", "AZURE_OPENAI_API_KEY"},
		parse: parseCodex,
		model: codexModel,
	},
	AgentGemini: {
		// Non-interactive when stdin is not a terminal; yolo approves
		// every tool call, in a folder it is told to trust (else it
		// falls back to asking, and a headless run then does nothing).
		argv:        []string{"gemini", "--output-format", "json", "--approval-mode", "yolo"},
		env:         map[string]string{"GEMINI_CLI_TRUST_WORKSPACE": "true"},
		errOnStderr: true,
		inherit: []string{"GEMINI_API_KEY", "GOOGLE_API_KEY", "GOOGLE_GEMINI_BASE_URL", "GEMINI_MODEL", "GEMINI_CLI_HOME",
			"GOOGLE_GENAI_USE_VERTEXAI", "GOOGLE_CLOUD_PROJECT", "GOOGLE_CLOUD_LOCATION", "GOOGLE_APPLICATION_CREDENTIALS"},
		parse: parseGemini,
	},
	AgentOpencode: {
		// run approves every tool call; the prompt comes on stdin.
		argv: []string{"opencode", "run", "--format", "json"},
		inherit: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY", "OPENROUTER_API_KEY",
			"OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT"},
		parse: parseOpencode,
	},
}

// AgentInherit returns the variables preset agent passes through when
// the role names none, or nil for an unknown agent.
func AgentInherit(agent string) []string {
	p, ok := agentPresets[agent]
	if !ok {
		return nil
	}
	out := slices.Concat(DefaultInherit, p.inherit, proxyEnv)
	return out
}

// AgentArgv returns preset agent's default argv, or nil for an unknown
// agent.
func AgentArgv(agent string) []string { return slices.Clone(agentPresets[agent].argv) }

// applyAgent fills c's zero fields from its preset: Argv, Inherit,
// PromptEnv ("-": the prompt goes on stdin, and no tool call the agent
// makes inherits it) and MaxOutputBytes (64 MiB); the preset's env is
// under c.Env.
func (c ExecConfig) applyAgent() (ExecConfig, error) {
	if c.Agent == "" {
		return c, nil
	}
	p, ok := agentPresets[c.Agent]
	if !ok {
		return c, fmt.Errorf("agent: %q is not an agent: want %s", c.Agent, strings.Join(Agents, ", "))
	}
	if len(c.Argv) == 0 {
		c.Argv = slices.Clone(p.argv)
	}
	if c.Inherit == nil {
		c.Inherit = AgentInherit(c.Agent)
	}
	if c.PromptEnv == "" {
		c.PromptEnv = NoPromptEnv
	}
	if c.MaxOutputBytes == 0 {
		c.MaxOutputBytes = maxAgentOutputBytes
	}
	env := make(map[string]string, len(p.env)+len(c.Env))
	for k, v := range p.env {
		env[k] = v
	}
	for k, v := range c.Env {
		env[k] = v
	}
	c.Env = env
	return c, nil
}

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
			err = fmt.Errorf("%w: %w", ErrPermanent, err)
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
