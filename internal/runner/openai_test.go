package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/subjects"
)

// The key the fake server expects; tests check it never leaks.
const (
	testOpenAIKey    = "sk-test-must-never-leak-7f3a9c"
	testOpenAIKeyEnv = "DROVER_TEST_OPENAI_KEY"
)

// Role outputs the fake model replies with.
const (
	testPlanOut      = `{"plan":"add an append-only audit log","steps":["write","fsync","replay"]}`
	testChangeOut    = `{"change":"added audit.Logger with fsync on every append"}`
	testApproveOut   = `{"verdict":"approve","feedback":"the log survives a restart"}`
	testNoVerdictOut = `{"feedback":"looks fine to me"}`
)

// openAIBundle is a fake chat completions server that records every
// request and answers attempt i with script[i] (the last one repeats),
// plus a sleep that records the runner's backoff delays without waiting.
type openAIBundle struct {
	srv    *httptest.Server
	mu     sync.Mutex
	seen   []seenRequest
	script []http.HandlerFunc
	sleeps []time.Duration
}

// seenRequest is what the fake server received.
type seenRequest struct {
	method, path, auth, contentType string
	fields                          map[string]json.RawMessage
	body                            chatRequest
}

func setupOpenAI(t *testing.T, script ...http.HandlerFunc) *openAIBundle {
	t.Helper()
	require.NotEmpty(t, script)
	b := &openAIBundle{script: script}
	b.srv = httptest.NewServer(http.HandlerFunc(b.serve))
	t.Cleanup(b.srv.Close)
	return b
}

func (b *openAIBundle) serve(w http.ResponseWriter, r *http.Request) {
	raw, _ := io.ReadAll(r.Body)
	s := seenRequest{
		method: r.Method, path: r.URL.Path,
		auth: r.Header.Get("Authorization"), contentType: r.Header.Get("Content-Type"),
	}
	_ = json.Unmarshal(raw, &s.fields)
	_ = json.Unmarshal(raw, &s.body)
	b.mu.Lock()
	h := b.script[min(len(b.seen), len(b.script)-1)]
	b.seen = append(b.seen, s)
	b.mu.Unlock()
	h(w, r)
}

// runner returns an OpenAI runner for role aimed at the fake server, with
// fast retries; fields set in cfg win.
func (b *openAIBundle) runner(t *testing.T, role subjects.Role, cfg OpenAIConfig, opts ...OpenAIOption) *OpenAI {
	t.Helper()
	if cfg.BaseURL == "" {
		cfg.BaseURL = b.srv.URL + "/v1"
	}
	if cfg.Model == "" {
		cfg.Model = "gpt-test"
	}
	if cfg.APIKeyEnv == "" {
		cfg.APIKeyEnv = testOpenAIKeyEnv
	}
	if cfg.RetryBase == 0 {
		cfg.RetryBase = 10 * time.Millisecond
	}
	all := []OpenAIOption{WithHTTPClient(b.srv.Client()), WithLookupEnv(testLookupEnv), WithSleep(b.sleep)}
	o, err := NewOpenAI(role, cfg, prompt.Defaults(), append(all, opts...)...)
	require.NoError(t, err)
	return o
}

func testLookupEnv(name string) (string, bool) {
	if name == testOpenAIKeyEnv {
		return testOpenAIKey + "\n", true // as read from a key file
	}
	return "", false
}

func (b *openAIBundle) sleep(ctx context.Context, d time.Duration) error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.sleeps = append(b.sleeps, d)
	return ctx.Err()
}

func (b *openAIBundle) requests() []seenRequest {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]seenRequest(nil), b.seen...)
}

func (b *openAIBundle) delays() []time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]time.Duration(nil), b.sleeps...)
}

// completion answers with a chat completion whose content is content.
func completion(content string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "chatcmpl-1", "object": "chat.completion", "model": "gpt-test-2025-01-01",
			"choices": []any{map[string]any{
				"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": content},
			}},
			"usage": map[string]int{"prompt_tokens": 120, "completion_tokens": 30, "total_tokens": 150},
		})
	}
}

// reply answers with a status, a body and header pairs.
func reply(code int, body string, header ...string) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		for i := 0; i+1 < len(header); i += 2 {
			w.Header().Set(header[i], header[i+1])
		}
		w.WriteHeader(code)
		_, _ = io.WriteString(w, body)
	}
}

// openAIReq is a request for role with the earlier roles' outputs filled in.
func openAIReq(t *testing.T, role subjects.Role) Request {
	t.Helper()
	req := simReq(t, role, "")
	if role != subjects.RolePlanner {
		req.Plan = json.RawMessage(testPlanOut)
	}
	if role == subjects.RoleJudge {
		req.Change = json.RawMessage(testChangeOut)
	}
	return req
}

func TestOpenAISuccess(t *testing.T) {
	t.Parallel()
	temp := 0.2
	for _, tc := range []struct {
		role   subjects.Role
		out    string
		action string
	}{
		{subjects.RolePlanner, testPlanOut, ""},
		{subjects.RoleImplementer, testChangeOut, ""},
		{subjects.RoleJudge, testApproveOut, subjects.VerdictApprove},
	} {
		t.Run(string(tc.role), func(t *testing.T) {
			t.Parallel()
			b := setupOpenAI(t, completion(tc.out))
			o := b.runner(t, tc.role, OpenAIConfig{
				Model: "gpt-4o-mini", Temperature: &temp, MaxTokens: 256, System: "You are careful.",
			})
			req := openAIReq(t, tc.role)
			res, err := o.Run(context.Background(), req)
			require.NoError(t, err)
			if tc.action != "" {
				require.Equal(t, tc.action, res.Action)
			}
			require.True(t, json.Valid(res.Output), "output %s", res.Output)
			require.Equal(t, OpenAIUsage{PromptTokens: 120, CompletionTokens: 30, TotalTokens: 150}, res.Metadata["usage"])
			require.Equal(t, "gpt-test-2025-01-01", res.Metadata["model"])
			require.Equal(t, 0, res.Metadata["retries"])

			seen := b.requests()
			require.Len(t, seen, 1)
			got := seen[0]
			require.Equal(t, http.MethodPost, got.method)
			require.Equal(t, "/v1/chat/completions", got.path)
			require.Equal(t, "Bearer "+testOpenAIKey, got.auth)
			require.Equal(t, "application/json", got.contentType)
			require.Equal(t, "gpt-4o-mini", got.body.Model)
			require.Equal(t, json.RawMessage("0.2"), got.fields["temperature"])
			require.Equal(t, json.RawMessage("256"), got.fields["max_tokens"])
			require.Len(t, got.body.Messages, 2)
			require.Equal(t, chatMessage{Role: "system", Content: "You are careful."}, got.body.Messages[0])
			require.Equal(t, "user", got.body.Messages[1].Role)
			require.Contains(t, got.body.Messages[1].Content, req.Task.Scope)
		})
	}
}

func TestOpenAIOmitsUnsetFields(t *testing.T) {
	t.Parallel()
	b := setupOpenAI(t, completion(testPlanOut))
	// A trailing slash on the base URL is ignored; an unset key env var
	// sends no Authorization header (local servers).
	o := b.runner(t, subjects.RolePlanner, OpenAIConfig{BaseURL: b.srv.URL + "/v1/", APIKeyEnv: "NO_SUCH_KEY"})
	_, err := o.Run(context.Background(), openAIReq(t, subjects.RolePlanner))
	require.NoError(t, err)

	seen := b.requests()
	require.Len(t, seen, 1)
	require.Equal(t, "/v1/chat/completions", seen[0].path)
	require.Empty(t, seen[0].auth)
	require.NotContains(t, seen[0].fields, "temperature")
	require.NotContains(t, seen[0].fields, "max_tokens")
	require.Len(t, seen[0].body.Messages, 1)
	require.Equal(t, "user", seen[0].body.Messages[0].Role)
}

func TestOpenAIIdentity(t *testing.T) {
	t.Parallel()
	b := setupOpenAI(t, completion(testPlanOut))
	base := b.runner(t, subjects.RolePlanner, OpenAIConfig{})
	id := base.Identity()
	require.True(t, strings.HasPrefix(id, OpenAIIdentityPrefix), id)
	require.NotContains(t, id, testOpenAIKey)

	// The key is not part of the identity; a trailing slash changes nothing.
	other := b.runner(t, subjects.RolePlanner, OpenAIConfig{BaseURL: b.srv.URL + "/v1/", APIKeyEnv: "OTHER_KEY"})
	require.Equal(t, id, other.Identity())

	temp := 0.0
	for name, cfg := range map[string]OpenAIConfig{
		"model":       {Model: "gpt-other"},
		"base url":    {BaseURL: b.srv.URL + "/v2"},
		"temperature": {Temperature: &temp},
		"max tokens":  {MaxTokens: 1},
		"system":      {System: "be brief"},
	} {
		require.NotEqual(t, id, b.runner(t, subjects.RolePlanner, cfg).Identity(), name)
	}
	require.NotContains(t, fmt.Sprintf("%+v", *base), testOpenAIKey)
}
