package tests

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/forge/forgetest"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

// modelKeyEnv holds the model key of TestTokensNeverLeave's worker process.
const modelKeyEnv = "DROVER_TEST_MODEL_KEY"

// The forge token and the model key never appear in any event, log, error,
// pull request or feedback, in plain text, base64 or hex. A drover serve
// process (real NATS, real git, delivery pull_request to a fake forge)
// runs a planner on a model that repeats the key it was sent, and a
// hostile exec implementer and judge that were given both secrets and
// print them everywhere: on stderr, in an error (exit 1), in their
// answers, in the judge's feedback. One task completes with a pull
// request; one fails until it is dead-lettered. Then every message of
// every stream (audit, DLQ, state, cache, blobs, lessons, tasks), every
// header, every log line of the process, every pull request's title and
// body, and every request the agents were given (their feedback included)
// is read: neither secret is there in any form.
func TestTokensNeverLeave(t *testing.T) {
	const token = "ghp-forge-Tok3n-5ecret-0a1b2c3d"
	const key = "sk-model-K3y-5ecret-4e5f6a7b8c"
	t.Setenv(prTokenEnv, token)
	t.Setenv(modelKeyEnv, key)
	found := redact.New(token, key)

	model := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet {
			_, _ = w.Write([]byte(`{"object":"list","data":[]}`))
			return
		}
		// A model that repeats the key it was sent, and its base64.
		sent := strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		plan := fmt.Sprintf(`{"plan": "use the key %s (%s)"}`, sent, base64.StdEncoding.EncodeToString([]byte(sent)))
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"id": "c1", "object": "chat.completion", "model": "tiny",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": plan}}}})
	}))
	t.Cleanup(model.Close)

	r := newWSRig(t)
	f := forgetest.New(t, "github", "acme/app", token)
	script, err := filepath.Abs(filepath.Join("testdata", "token_agent.sh"))
	require.NoError(t, err)
	agentDir := t.TempDir()
	rec := newRecorder(t, agentDir) // the contained agents save their requests through it
	exec := func(role string) string {
		return fmt.Sprintf("  %s: {runner: exec, timeout: 1m, exec: {argv: [sh, %q, %s], env: {TOKEN_AGENT_DIR: %q}, inherit: [PATH, %s, %s]}}\n",
			role, script, role, rec.URL(t, agentDir), prTokenEnv, modelKeyEnv)
	}
	doc := "roles:\n" +
		fmt.Sprintf("  planner: {runner: openai, timeout: 1m, openai: {base_url: %q, model: tiny, api_key_env: %s, max_retries: -1, allow_insecure_http: true}}\n",
			model.URL+"/v1", modelKeyEnv) +
		exec("implementer") + exec("judge") +
		fmt.Sprintf("sandbox: {read_only: [%q]}\n", filepath.Dir(script)) +
		fmt.Sprintf("workspace: {repo: %q, dir: %q, push: true, push_delay: 100ms}\n", r.remote.dir, filepath.Join(t.TempDir(), "ws")) +
		fmt.Sprintf("delivery: pull_request\npull_request: {forge: github, api_url: %q, repo: acme/app, base: main, token_env: %s}\n", f.APIURL(), prTokenEnv)
	cfg := filepath.Join(t.TempDir(), "drover.yaml")
	require.NoError(t, os.WriteFile(cfg, []byte(doc), 0o644))
	p := r.startProc("--config", cfg, "--worker-id", "tok-1", "--ack-wait", "2s", "--max-deliver", "2",
		"--retry-backoff", "50ms", "--retry-backoff-max", "200ms")

	after := r.submit(task("tokwf", "ok-1"), task("tokwf", "fail-1"))
	got := r.waitTerminal("tokwf", after, 2)
	require.Equal(t, subjects.EventTaskCompleted, got["ok-1"].EventType, "%+v", got["ok-1"])
	require.Equal(t, subjects.EventTaskFailed, got["fail-1"].EventType)
	require.Len(t, f.Pulls(), 1, "the completed task's pull request")

	// The secrets were there, and were masked: the record says so.
	var masked []string
	for _, ev := range r.events("tokwf") {
		if strings.Contains(ev.Error+ev.Reasoning+string(ev.Output), redact.Mask) {
			masked = append(masked, string(ev.EventType))
		}
	}
	require.Contains(t, masked, string(subjects.EventTaskRetried), "the error (stderr) was masked")
	require.Contains(t, masked, string(subjects.EventJudgeVerdict), "the feedback was masked")
	require.Contains(t, masked, string(subjects.EventPlannerDecision), "the model's plan was masked")
	require.NotEmpty(t, r.dlq())

	check := func(what, s string) {
		t.Helper()
		require.False(t, found.Contains(s), "%s holds a secret: %.400s", what, s)
		require.NotContains(t, s, base64.StdEncoding.EncodeToString([]byte(token)), what)
	}
	for _, name := range r.streamNames() {
		for _, m := range r.rawStream(name) {
			check(fmt.Sprintf("%s #%d", name, m.Sequence), string(m.Data))
			for k, vs := range m.Header {
				check(fmt.Sprintf("%s #%d header %s", name, m.Sequence, k), strings.Join(vs, "\n"))
			}
		}
	}
	check("the worker's log", p.stderrText())
	for _, pr := range f.Pulls() {
		check("pull request "+pr.Head, pr.Title+"\n"+pr.Body)
	}
	reqs, err := filepath.Glob(filepath.Join(agentDir, "*.json"))
	require.NoError(t, err)
	var sawFeedback bool
	for _, path := range reqs {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		check("the agent's request "+filepath.Base(path), string(b))
		sawFeedback = sawFeedback || strings.Contains(string(b), "do not hard-code")
	}
	require.True(t, sawFeedback, "the implementer got the judge's feedback, masked")
	check("the remote", gitIn(t, r.remote.dir, "log", "--all", "-p", "--format=%H %B"))
}

// streamNames lists every stream of the server.
func (b *bundle) streamNames() []string {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []string
	names := b.js.StreamNames(ctx)
	for n := range names.Name() {
		out = append(out, n)
	}
	require.NoError(b.t, names.Err())
	return out
}
