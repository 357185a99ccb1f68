package runner

import (
	"context"
	"fmt"
	"slices"
	"strings"
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
	// activity decodes one line of its stdout, as it comes, into the
	// role's live activity.
	activity activityDecoder
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
		parse:    parseClaude,
		activity: claudeActivity,
	},
	AgentCodex: {
		// Drover's sandbox contains it, so codex's own (which needs
		// namespaces the sandbox does not give) is off.
		argv: []string{"codex", "exec", "--json", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox", "-"},
		inherit: []string{"OPENAI_API_KEY", "CODEX_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORGANIZATION", "OPENAI_PROJECT",
			"CODEX_HOME", "AZURE_OPENAI_API_KEY"},
		parse:    parseCodex,
		activity: codexActivity,
		model:    codexModel,
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
		parse:    parseGemini,
		activity: noActivity, // one JSON document at the end: nothing to show while it runs
	},
	AgentOpencode: {
		// run approves every tool call; the prompt comes on stdin.
		argv: []string{"opencode", "run", "--format", "json"},
		inherit: []string{"ANTHROPIC_API_KEY", "OPENAI_API_KEY", "OPENAI_BASE_URL", "GEMINI_API_KEY", "OPENROUTER_API_KEY",
			"OPENCODE_CONFIG", "OPENCODE_CONFIG_CONTENT"},
		parse:    parseOpencode,
		activity: opencodeActivity,
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
