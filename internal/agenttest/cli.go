package agenttest

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// CLIsEnv names the directory the real agent CLIs are installed in, with
// `npm install --prefix "$DROVER_AGENT_CLIS" <pkg>@<version>` (.ci/run
// does it, at the versions it pins).
const CLIsEnv = "DROVER_AGENT_CLIS"

// CLI returns the directory that holds the agent CLI named name (claude,
// codex: the npm packages' bin names), for a child's PATH. Without it the
// test is skipped, or fails when CI is set. Under -short (make test-unit)
// it skips.
func CLI(t testing.TB, name string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs an agent CLI: not run with -short")
	}
	dir := os.Getenv(CLIsEnv)
	why := fmt.Sprintf("%s is not set (.ci/run installs the agent CLIs there)", CLIsEnv)
	if dir != "" {
		bin := filepath.Join(dir, "node_modules", ".bin")
		if info, err := os.Stat(filepath.Join(bin, name)); err == nil && !info.IsDir() {
			abs, err := filepath.Abs(bin)
			if err == nil {
				return abs
			}
		}
		why = fmt.Sprintf("%s is not installed under %s=%s", name, CLIsEnv, dir)
	}
	if os.Getenv("CI") != "" {
		t.Fatalf("agent CLI: %s", why)
	}
	t.Skipf("agent CLI: %s", why)
	return ""
}

// Path is a PATH for a child that finds the CLIs in dir first, then the
// system's programs (node, sh, git).
func Path(dir string) string {
	return strings.Join([]string{dir, "/usr/local/bin", "/usr/bin", "/bin"}, string(os.PathListSeparator))
}

// CodexHome writes a Codex configuration to a new directory, for CODEX_HOME:
// model, and a provider "drover-fake" at baseURL (the Responses fake's URL
// and /v1) whose key is in OPENAI_API_KEY, without retries.
func CodexHome(t testing.TB, baseURL, model string) string {
	t.Helper()
	dir := t.TempDir()
	cfg := fmt.Sprintf(`model = %q
model_provider = "drover-fake"

[model_providers.drover-fake]
name = "drover fake"
base_url = %q
env_key = "OPENAI_API_KEY"
wire_api = "responses"
request_max_retries = 0
stream_max_retries = 0
`, model, baseURL)
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o600); err != nil {
		t.Fatalf("codex home: %v", err)
	}
	return dir
}

// CodexConfig is the configuration of CodexHome as `-c key=value`
// options of the codex command, for a run whose CODEX_HOME is left in its
// HOME (where Drover keeps Codex's sessions).
func CodexConfig(baseURL, model string) []string {
	var argv []string
	for _, kv := range []string{
		fmt.Sprintf("model=%q", model), `model_provider="drover-fake"`, `model_providers.drover-fake.name="drover fake"`,
		fmt.Sprintf("model_providers.drover-fake.base_url=%q", baseURL), `model_providers.drover-fake.env_key="OPENAI_API_KEY"`,
		`model_providers.drover-fake.wire_api="responses"`, "model_providers.drover-fake.request_max_retries=0",
		"model_providers.drover-fake.stream_max_retries=0",
	} {
		argv = append(argv, "-c", kv)
	}
	return argv
}

// GeminiHome returns a new HOME whose Gemini CLI settings select the API
// key (GEMINI_API_KEY) as the auth method, which a run against
// GOOGLE_GEMINI_BASE_URL needs: without it the CLI infers a gateway auth
// that it refuses in headless mode ("Invalid auth method selected").
func GeminiHome(t testing.TB) string {
	t.Helper()
	home := t.TempDir()
	dir := filepath.Join(home, ".gemini")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		t.Fatalf("gemini home: %v", err)
	}
	settings := `{"security": {"auth": {"selectedType": "gemini-api-key"}}}`
	if err := os.WriteFile(filepath.Join(dir, "settings.json"), []byte(settings), 0o600); err != nil {
		t.Fatalf("gemini home: %v", err)
	}
	return home
}
