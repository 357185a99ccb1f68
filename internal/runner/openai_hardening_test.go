package runner

import (
	"context"
	"encoding/json"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/subjects"
)

// formatRefused answers as servers without JSON mode do.
var formatRefused = reply(http.StatusBadRequest, `{"error":{"message":"Unrecognized request argument supplied: response_format"}}`)

func TestOpenAIJSONMode(t *testing.T) {
	t.Parallel()
	want := json.RawMessage(`{"type":"json_object"}`)
	for _, tc := range []struct {
		name    string
		mode    string
		script  []http.HandlerFunc
		formats []bool // response_format sent, per request
		err     string
	}{
		{"auto sends it", "", []http.HandlerFunc{completion(testPlanOut)}, []bool{true}, ""},
		{"on sends it", JSONModeOn, []http.HandlerFunc{completion(testPlanOut)}, []bool{true}, ""},
		{"off omits it", JSONModeOff, []http.HandlerFunc{completion(testPlanOut)}, []bool{false}, ""},
		{"auto falls back once", JSONModeAuto, []http.HandlerFunc{formatRefused, completion(testPlanOut)}, []bool{true, false}, ""},
		{"on fails", JSONModeOn, []http.HandlerFunc{formatRefused, completion(testPlanOut)}, []bool{true}, "HTTP 400"},
		{"auto: another 400 is no fallback", JSONModeAuto, []http.HandlerFunc{reply(http.StatusBadRequest, "bad model"), completion(testPlanOut)}, []bool{true}, "HTTP 400"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupOpenAI(t, tc.script...)
			o := b.runner(t, subjects.RolePlanner, OpenAIConfig{JSONMode: tc.mode})
			res, err := o.Run(context.Background(), openAIReq(t, subjects.RolePlanner))
			if tc.err != "" {
				require.ErrorContains(t, err, tc.err)
				require.ErrorIs(t, err, ErrPermanent)
			} else {
				require.NoError(t, err)
				require.Equal(t, len(tc.formats)-1, res.Metadata["retries"])
			}
			seen := b.requests()
			require.Len(t, seen, len(tc.formats))
			for i, f := range tc.formats {
				if f {
					require.JSONEq(t, string(want), string(seen[i].fields["response_format"]), "request %d", i)
				} else {
					require.NotContains(t, seen[i].fields, "response_format", "request %d", i)
				}
			}
		})
	}
}

func TestOpenAIJSONModeFallbackRemembered(t *testing.T) {
	t.Parallel()
	b := setupOpenAI(t, formatRefused, completion(testPlanOut))
	o := b.runner(t, subjects.RolePlanner, OpenAIConfig{})
	for range 2 {
		_, err := o.Run(context.Background(), openAIReq(t, subjects.RolePlanner))
		require.NoError(t, err)
	}
	seen := b.requests()
	require.Len(t, seen, 3, "one refusal, then no more response_format")
	require.Contains(t, seen[0].fields, "response_format")
	require.NotContains(t, seen[1].fields, "response_format")
	require.NotContains(t, seen[2].fields, "response_format")
}

func TestInsecureHTTP(t *testing.T) {
	t.Parallel()
	for url, want := range map[string]bool{
		"https://api.example.com/v1":  false,
		"http://localhost:11434/v1":   false,
		"http://LOCALHOST/v1":         false,
		"http://127.0.0.1:8000/v1":    false,
		"http://127.9.9.9/v1":         false,
		"http://[::1]:8080/v1":        false,
		"http://model.internal:80/v1": true,
		"http://10.0.0.5:8000/v1":     true,
		"http://localhost.evil.com/":  true,
		"HTTP://192.168.1.2/v1":       true,
	} {
		require.Equal(t, want, InsecureHTTP(url), url)
	}
}

func TestOpenAIRefusesKeyOverInsecureHTTP(t *testing.T) {
	t.Parallel()
	cfg := OpenAIConfig{BaseURL: "http://model.internal:8000/v1", Model: "m", APIKeyEnv: testOpenAIKeyEnv}

	// A key set at start: refused at construction.
	_, err := NewOpenAI(subjects.RoleJudge, cfg, nil, WithLookupEnv(testLookupEnv))
	require.ErrorIs(t, err, ErrInsecureHTTP)
	require.ErrorContains(t, err, "allow_insecure_http")

	// A key set later: refused at call time, before any request.
	var mu sync.Mutex
	keySet := false
	lookup := func(name string) (string, bool) {
		mu.Lock()
		defer mu.Unlock()
		if keySet {
			return testLookupEnv(name)
		}
		return "", false
	}
	var calls atomic.Int32
	client := &http.Client{Transport: roundTripFunc(func(*http.Request) (*http.Response, error) {
		calls.Add(1)
		return nil, errors.New("no network in this test")
	})}
	o, err := NewOpenAI(subjects.RoleJudge, cfg, nil, WithLookupEnv(lookup), WithHTTPClient(client))
	require.NoError(t, err, "no key, nothing to leak")
	mu.Lock()
	keySet = true
	mu.Unlock()
	_, err = o.Run(context.Background(), openAIReq(t, subjects.RoleJudge))
	require.ErrorIs(t, err, ErrInsecureHTTP)
	require.ErrorIs(t, err, ErrPermanent)
	require.NotContains(t, err.Error(), testOpenAIKey)
	require.Zero(t, calls.Load(), "no request was sent")

	// Allowed explicitly.
	cfg.AllowInsecureHTTP = true
	_, err = NewOpenAI(subjects.RoleJudge, cfg, nil, WithLookupEnv(testLookupEnv))
	require.NoError(t, err)
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

func TestOpenAIMetadataBounded(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 5000)
	b := setupOpenAI(t, func(w http.ResponseWriter, _ *http.Request) {
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "x" + long, "model": long,
			"choices": []any{map[string]any{"message": map[string]any{"content": testApproveOut}}},
		})
	})
	res, err := b.runner(t, subjects.RoleJudge, OpenAIConfig{}).Run(context.Background(), openAIReq(t, subjects.RoleJudge))
	require.NoError(t, err)
	for _, k := range []string{"model", "id"} {
		s, ok := res.Metadata[k].(string)
		require.True(t, ok, k)
		require.LessOrEqual(t, len(s), maxMetaBytes+len("…[truncated]"), k)
		require.True(t, utf8.ValidString(s), k)
		require.True(t, strings.HasSuffix(s, "…[truncated]"), k)
	}
}

func TestOpenAIOwnTransport(t *testing.T) {
	t.Parallel()
	var closed atomic.Int32
	srv := httptest.NewUnstartedServer(completion(testPlanOut))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateClosed {
			closed.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	cfg := OpenAIConfig{
		BaseURL: srv.URL + "/v1", Model: "m", MaxConns: 7,
		RequestTimeout: time.Minute, RoleTimeout: 20 * time.Second,
	}
	o, err := NewOpenAI(subjects.RolePlanner, cfg, prompt.Defaults(), WithLookupEnv(testLookupEnv))
	require.NoError(t, err)
	require.NotNil(t, o.transport)
	require.NotSame(t, http.DefaultTransport, o.opts.client.Transport)
	require.Equal(t, 7, o.transport.MaxIdleConnsPerHost)
	require.Equal(t, 20*time.Second, o.transport.ResponseHeaderTimeout, "bounded by the role's timeout")
	require.Equal(t, openAITLSTimeout, o.transport.TLSHandshakeTimeout)
	require.Equal(t, openAIIdleConnTimeout, o.transport.IdleConnTimeout)

	_, err = o.Run(context.Background(), openAIReq(t, subjects.RolePlanner))
	require.NoError(t, err)
	require.Zero(t, closed.Load(), "the connection is kept for the next call")
	require.NoError(t, o.Close())
	assert.Eventually(t, func() bool { return closed.Load() == 1 }, 10*time.Second, 5*time.Millisecond,
		"Close releases the idle connection")

	d, err := NewOpenAI(subjects.RolePlanner, OpenAIConfig{BaseURL: srv.URL, Model: "m"}, nil)
	require.NoError(t, err)
	require.Equal(t, DefaultOpenAIMaxConns, d.transport.MaxIdleConnsPerHost)
	require.Equal(t, DefaultOpenAIRequestTimeout, d.transport.ResponseHeaderTimeout)
}
