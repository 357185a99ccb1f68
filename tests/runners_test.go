package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/config"
	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// TestRunnersExecEndToEnd runs every role through the exec runner: a shell
// script that reads the role's JSON request on stdin and answers as the
// role would. The script is pure and says so (cache: true), so a re-run
// under a new workflow is served from the cache.
func TestRunnersExecEndToEnd(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs(filepath.Join("testdata", "agent.sh"))
	require.NoError(t, err)
	calls := filepath.Join(t.TempDir(), "calls.log")
	role := func(name string) string {
		return fmt.Sprintf(`  %s:
    runner: exec
    timeout: 1m
    cache: true
    exec: {argv: [sh, %q, %s], env: {AGENT_CALL_LOG: %q}, inherit: [PATH]}
`, name, script, name, calls)
	}
	set := runnersFromConfig(t, "roles:\n"+role("planner")+role("implementer")+role("judge"))
	for _, r := range subjects.Roles {
		require.Contains(t, set.For(r).Identity(), "exec", r)
	}
	count := func() int {
		b, err := os.ReadFile(calls)
		if os.IsNotExist(err) {
			return 0
		}
		require.NoError(t, err)
		return strings.Count(string(b), "\n")
	}
	runTwiceFromCache(t, set, count)
}

// TestRunnersExecCachePolicy runs the same task under two workflows with
// an exec implementer (planner and judge on the sim). An exec agent is
// side-effecting, so by default it runs for each workflow, its results
// neither served from the cache nor stored; with cache: true (declared
// pure) the second workflow is served from the cache.
func TestRunnersExecCachePolicy(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs(filepath.Join("testdata", "agent.sh"))
	require.NoError(t, err)
	for _, tc := range []struct {
		name, cache string
		calls       int
		cached      bool
	}{
		{"exec default", "", 2, false},
		{"declared pure", "cache: true, ", 1, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			calls := filepath.Join(t.TempDir(), "calls.log")
			set := runnersFromConfig(t, fmt.Sprintf(`roles:
  planner: {runner: sim}
  judge: {runner: sim}
  implementer: {runner: exec, %sexec: {argv: [sh, %q, implementer], env: {AGENT_CALL_LOG: %q}, inherit: [PATH]}}
`, tc.cache, script, calls))
			b := setup(t)
			b.startWorker(worker.Config{Concurrency: 1, Runners: set})
			for _, wf := range []string{"run-1", "run-2"} {
				after := b.submit(task(wf, "T1"))
				ev := b.waitTerminal(wf, after, 1)["T1"]
				require.Equal(t, subjects.EventTaskCompleted, ev.EventType, "%s: %s %s", wf, ev.Action, ev.Error)
			}
			log, err := os.ReadFile(calls)
			require.NoError(t, err)
			require.Equal(t, tc.calls, strings.Count(string(log), "\n"), "implementer calls over both workflows")
			for _, ev := range b.events("run-2") {
				switch ev.Actor {
				case subjects.ActorOf(subjects.RoleImplementer):
					require.Equal(t, tc.cached, ev.Cached, ev.EventID)
				case subjects.ActorOf(subjects.RolePlanner), subjects.ActorOf(subjects.RoleJudge):
					require.True(t, ev.Cached, "the sim roles stay cached: %s", ev.EventID)
				}
			}
		})
	}
}

// TestRunnersOpenAIEndToEnd runs every role through the openai runner
// against an in-process server speaking the chat completions API. A re-run
// under a new workflow is served from the cache: no new request.
func TestRunnersOpenAIEndToEnd(t *testing.T) {
	t.Parallel()
	var requests atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
			_, _ = w.Write([]byte(`{"object":"list","data":[]}`)) // the worker's readiness check, not a call
			return
		}
		requests.Add(1)
		var req struct {
			Model    string `json:"model"`
			Messages []struct {
				Role    string `json:"role"`
				Content string `json:"content"`
			} `json:"messages"`
		}
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || json.NewDecoder(r.Body).Decode(&req) != nil ||
			req.Model != "tiny" || len(req.Messages) != 1 || req.Messages[0].Role != "user" {
			http.Error(w, `{"error":{"message":"bad request"}}`, http.StatusBadRequest)
			return
		}
		content := answer(req.Messages[0].Content)
		if content == "" {
			http.Error(w, `{"error":{"message":"no role in the prompt"}}`, http.StatusBadRequest)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": "tiny",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content}}},
			"usage": map[string]int{"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
		})
	}))
	t.Cleanup(srv.Close)
	role := func(name string) string {
		return fmt.Sprintf("  %s: {runner: openai, timeout: 1m, openai: {base_url: %q, model: tiny, api_key_env: DROVER_TEST_UNSET_KEY, max_retries: -1}}\n",
			name, srv.URL+"/v1")
	}
	set := runnersFromConfig(t, "roles:\n"+role("planner")+role("implementer")+role("judge"))
	b := runTwiceFromCache(t, set, func() int { return int(requests.Load()) })
	for _, ev := range b.events("run-1") {
		if ev.Actor != subjects.ActorSystem {
			require.JSONEq(t, `{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}`, metadataField(t, ev.Metadata, "usage"), ev.EventID)
		}
	}
}

// answer is what the fake model says to a prompt, by the role it names.
func answer(text string) string {
	switch {
	case strings.HasPrefix(text, "You are the planner"):
		return `{"plan": "do it", "steps": ["write", "test"]}`
	case strings.HasPrefix(text, "You are the implementer"):
		return "```json\n{\"change\": \"did it\", \"files\": [\"a.go\"], \"notes\": \"go test passes\"}\n```"
	case strings.HasPrefix(text, "You are the judge"):
		return `{"verdict": "approve", "feedback": "ok"}`
	}
	return ""
}

// runnersFromConfig builds a runner set from a configuration document, as
// drover serve does.
func runnersFromConfig(t *testing.T, doc string) runner.Set {
	t.Helper()
	f, err := config.Parse([]byte(doc))
	require.NoError(t, err)
	set, err := f.Runners(prompt.Defaults(), runner.NewSim(runner.SimOptions{}))
	require.NoError(t, err)
	return set
}

// runTwiceFromCache runs three tasks on a worker with set, then the same
// tasks under a new workflow: the first run calls each role once per task,
// the second none, its role events all marked cached.
func runTwiceFromCache(t *testing.T, set runner.Set, calls func() int) *bundle {
	t.Helper()
	b := setup(t)
	b.startWorker(worker.Config{Concurrency: 3, Runners: set})
	board := func(wf string) []subjects.TaskRequest {
		var out []subjects.TaskRequest
		for i := range 3 {
			out = append(out, task(wf, fmt.Sprintf("T%d", i)))
		}
		return out
	}
	after := b.submit(board("run-1")...)
	for id, ev := range b.waitTerminal("run-1", after, 3) {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType, "%s: %s %s", id, ev.Action, ev.Error)
	}
	require.Equal(t, 3*3, calls(), "one call per role and task")
	for _, ev := range b.events("run-1") {
		if ev.Actor != subjects.ActorSystem {
			require.False(t, ev.Cached, ev.EventID)
		}
		if ev.EventType == subjects.EventJudgeVerdict {
			require.Equal(t, subjects.VerdictApprove, ev.Action)
		}
	}

	after = b.submit(board("run-2")...)
	for id, ev := range b.waitTerminal("run-2", after, 3) {
		require.Equal(t, subjects.EventTaskCompleted, ev.EventType, id)
	}
	require.Equal(t, 3*3, calls(), "no runner call on the re-run")
	roles := 0
	for _, ev := range b.events("run-2") {
		if ev.Actor != subjects.ActorSystem {
			roles++
			require.True(t, ev.Cached, ev.EventID)
		}
	}
	require.Equal(t, 3*3, roles)
	return b
}

// metadataField returns one field of an event's metadata as JSON text.
func metadataField(t *testing.T, md json.RawMessage, key string) string {
	t.Helper()
	var m map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(md, &m))
	require.Contains(t, m, key)
	return string(m[key])
}
