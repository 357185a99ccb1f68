package runner

import (
	"context"
	"fmt"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// echoAuth answers code with a body that repeats the request's
// Authorization header, as a careless gateway might.
func echoAuth(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		reply(code, fmt.Sprintf(`{"error":"rejected %s"}`, r.Header.Get("Authorization")))(w, r)
	}
}

func TestOpenAIPermanentStatuses(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		code int
		want string
	}{
		{http.StatusUnauthorized, "the API key in env var " + testOpenAIKeyEnv + " was rejected"},
		{http.StatusForbidden, "the API key in env var " + testOpenAIKeyEnv + " was rejected"},
		{http.StatusBadRequest, "HTTP 400 Bad Request"},
		{http.StatusNotFound, "check base_url and model"},
	} {
		t.Run(http.StatusText(tc.code), func(t *testing.T) {
			t.Parallel()
			b := setupOpenAI(t, echoAuth(tc.code))
			o := b.runner(t, subjects.RolePlanner, OpenAIConfig{})
			_, err := o.Run(context.Background(), openAIReq(t, subjects.RolePlanner))
			require.ErrorIs(t, err, ErrPermanent)
			require.ErrorContains(t, err, tc.want)
			require.ErrorContains(t, err, "rejected Bearer [redacted]") // the body excerpt, key removed
			require.NotContains(t, err.Error(), testOpenAIKey)
			require.Len(t, b.requests(), 1, "a permanent error is not retried")
			require.Empty(t, b.delays())
		})
	}
}

func TestOpenAIUnauthorizedWithoutKey(t *testing.T) {
	t.Parallel()
	b := setupOpenAI(t, reply(http.StatusUnauthorized, "missing key"))
	o := b.runner(t, subjects.RolePlanner, OpenAIConfig{APIKeyEnv: "DROVER_TEST_UNSET_KEY"})
	_, err := o.Run(context.Background(), openAIReq(t, subjects.RolePlanner))
	require.ErrorIs(t, err, ErrPermanent)
	require.ErrorContains(t, err, "env var DROVER_TEST_UNSET_KEY was rejected (the variable is unset)")
}

func TestOpenAIBadResponses(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 4*excerptBytes)
	for _, tc := range []struct {
		name string
		role subjects.Role
		h    http.HandlerFunc
		want string
	}{
		{"malformed body", subjects.RolePlanner, reply(http.StatusOK, "<html>"+testOpenAIKey+long), "malformed response"},
		{"no choices", subjects.RolePlanner, reply(http.StatusOK, `{"model":"m","choices":[]}`), "response has no choices"},
		{"null content", subjects.RolePlanner, reply(http.StatusOK, `{"choices":[{"message":{"content":null},"finish_reason":"tool_calls"}]}`), `empty content (finish_reason "tool_calls")`},
		{"refusal", subjects.RolePlanner, reply(http.StatusOK, `{"choices":[{"message":{"content":null,"refusal":"I can't"}}]}`), "model refused: I can't"},
		{"judge without verdict", subjects.RoleJudge, completion(testNoVerdictOut), "judge: openai model gpt-test"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupOpenAI(t, tc.h)
			o := b.runner(t, tc.role, OpenAIConfig{})
			res, err := o.Run(context.Background(), openAIReq(t, tc.role))
			require.ErrorContains(t, err, tc.want)
			require.NotErrorIs(t, err, ErrPermanent, "the pipeline retries a bad reply: %v", err)
			require.Empty(t, res.Action, "never a silent approval")
			require.NotContains(t, err.Error(), testOpenAIKey)
			require.Less(t, len(err.Error()), 2*excerptBytes, "error quotes a bounded excerpt")
			require.Len(t, b.requests(), 1, "a bad reply is left to the pipeline's retry")
		})
	}
}

func TestOpenAIRoleMismatch(t *testing.T) {
	t.Parallel()
	b := setupOpenAI(t, completion(testPlanOut))
	o := b.runner(t, subjects.RolePlanner, OpenAIConfig{})
	_, err := o.Run(context.Background(), openAIReq(t, subjects.RoleJudge))
	require.ErrorIs(t, err, ErrPermanent)
	require.Empty(t, b.requests())
}

// TestOpenAIKeyNeverLeaks runs a success and every failure and checks
// the key is nowhere in what the runner hands back.
func TestOpenAIKeyNeverLeaks(t *testing.T) {
	t.Parallel()
	for _, h := range []http.HandlerFunc{
		completion(testApproveOut), echoAuth(http.StatusUnauthorized), echoAuth(http.StatusInternalServerError),
		echoAuth(http.StatusOK), echoAuth(http.StatusTooManyRequests),
	} {
		b := setupOpenAI(t, h)
		o := b.runner(t, subjects.RoleJudge, OpenAIConfig{MaxRetries: 1})
		res, err := o.Run(context.Background(), openAIReq(t, subjects.RoleJudge))
		seen := b.requests()
		require.NotEmpty(t, seen)
		require.Equal(t, "Bearer "+testOpenAIKey, seen[0].auth, "the key is sent")
		dump := fmt.Sprintf("%v %+v %#v %s", err, res, res.Metadata, o.Identity())
		require.NotContains(t, dump, testOpenAIKey)
	}
}

func TestNewOpenAIValidation(t *testing.T) {
	t.Parallel()
	nan, neg := math.NaN(), -0.5
	ok := OpenAIConfig{BaseURL: "http://localhost:11434/v1", Model: "llama3"}
	for _, tc := range []struct {
		name string
		edit func(*OpenAIConfig)
		want string
	}{
		{"no base url", func(c *OpenAIConfig) { c.BaseURL = "" }, "base_url: required"},
		{"relative base url", func(c *OpenAIConfig) { c.BaseURL = "localhost/v1" }, "base_url"},
		{"ftp base url", func(c *OpenAIConfig) { c.BaseURL = "ftp://host/v1" }, "base_url"},
		{"no model", func(c *OpenAIConfig) { c.Model = " " }, "model: required"},
		{"NaN temperature", func(c *OpenAIConfig) { c.Temperature = &nan }, "temperature"},
		{"negative temperature", func(c *OpenAIConfig) { c.Temperature = &neg }, "temperature: -0.5"},
		{"negative max tokens", func(c *OpenAIConfig) { c.MaxTokens = -1 }, "max_tokens: -1"},
		{"negative timeout", func(c *OpenAIConfig) { c.RequestTimeout = -time.Second }, "request_timeout"},
		{"max under base", func(c *OpenAIConfig) { c.RetryBase, c.RetryMax = time.Minute, time.Second }, "retry_max: 1s"},
		{"bad env name", func(c *OpenAIConfig) { c.APIKeyEnv = "A=B" }, "api_key_env"},
		{"bad json mode", func(c *OpenAIConfig) { c.JSONMode = "yes" }, `json_mode: "yes"`},
	} {
		cfg := ok
		tc.edit(&cfg)
		_, err := NewOpenAI(subjects.RolePlanner, cfg, nil)
		require.ErrorContains(t, err, tc.want, tc.name)
		require.ErrorContains(t, err, "planner: openai: ", tc.name)
	}

	_, err := NewOpenAI("reviewer", ok, nil)
	require.ErrorContains(t, err, `unknown role "reviewer"`)
	_, err = NewOpenAI(subjects.RolePlanner, ok, nil, WithHTTPClient(nil))
	require.ErrorContains(t, err, "WithHTTPClient")
	_, err = NewOpenAI(subjects.RolePlanner, ok, nil, WithSleep(nil))
	require.ErrorContains(t, err, "WithSleep")

	o, err := NewOpenAI(subjects.RolePlanner, ok, nil)
	require.NoError(t, err)
	require.Equal(t, OpenAIConfig{
		BaseURL: ok.BaseURL, Model: "llama3", APIKeyEnv: DefaultOpenAIKeyEnv,
		RequestTimeout: DefaultOpenAIRequestTimeout, MaxRetries: DefaultOpenAIMaxRetries,
		RetryBase: DefaultOpenAIRetryBase, RetryMax: DefaultOpenAIRetryMax,
		JSONMode: JSONModeAuto, MaxConns: DefaultOpenAIMaxConns,
	}, o.cfg)
}
