package runner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// healthServer answers GET /models with status and counts the requests;
// it fails the test if the API key is sent.
func healthServer(t *testing.T, status *atomic.Int32, calls *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		calls.Add(1)
		if r.Header.Get("Authorization") != "" {
			t.Errorf("health check sent an Authorization header")
		}
		if r.Method != http.MethodGet || r.URL.Path != "/v1/models" {
			t.Errorf("health check: %s %s", r.Method, r.URL.Path)
		}
		w.WriteHeader(int(status.Load()))
	}))
	t.Cleanup(srv.Close)
	return srv
}

func healthRunner(t *testing.T, baseURL string) *OpenAI {
	t.Helper()
	o, err := NewOpenAI(subjects.RoleImplementer, OpenAIConfig{BaseURL: baseURL, Model: "m", APIKeyEnv: testOpenAIKeyEnv},
		nil, WithLookupEnv(func(string) (string, bool) { return testOpenAIKey, true }))
	require.NoError(t, err)
	return o
}

func TestOpenAIHealthStatus(t *testing.T) {
	for _, tc := range []struct {
		status int
		ok     bool
	}{
		{http.StatusOK, true},
		{http.StatusUnauthorized, true}, // the endpoint is there; the key is not checked
		{http.StatusNotFound, true},     // servers without /models
		{http.StatusInternalServerError, false},
		{http.StatusServiceUnavailable, false},
	} {
		t.Run(http.StatusText(tc.status), func(t *testing.T) {
			var status, calls atomic.Int32
			status.Store(int32(tc.status))
			srv := healthServer(t, &status, &calls)
			err := healthRunner(t, srv.URL+"/v1").Health(context.Background())
			if tc.ok {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, ErrUnreachable)
			require.Contains(t, err.Error(), "model m at "+srv.URL+"/v1")
			require.NotContains(t, err.Error(), testOpenAIKey)
		})
	}
}

func TestOpenAIHealthCachedAndRecovers(t *testing.T) {
	var status, calls atomic.Int32
	status.Store(http.StatusOK)
	srv := healthServer(t, &status, &calls)
	o := healthRunner(t, srv.URL+"/v1")
	now := time.Now()
	o.health.now = func() time.Time { return now }
	ctx := context.Background()

	for range 5 {
		require.NoError(t, o.Health(ctx))
	}
	require.EqualValues(t, 1, calls.Load(), "a healthy result is reused")

	status.Store(http.StatusBadGateway)
	require.NoError(t, o.Health(ctx), "still cached")
	now = now.Add(HealthCacheOK)
	require.ErrorIs(t, o.Health(ctx), ErrUnreachable)
	require.ErrorIs(t, o.Health(ctx), ErrUnreachable)
	require.EqualValues(t, 2, calls.Load(), "a failure is reused too, briefly")

	status.Store(http.StatusOK)
	now = now.Add(HealthCacheFail)
	require.NoError(t, o.Health(ctx), "back after the shorter failure cache")
	require.EqualValues(t, 3, calls.Load())
}

func TestOpenAIHealthDown(t *testing.T) {
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	err := healthRunner(t, url+"/v1").Health(context.Background())
	require.ErrorIs(t, err, ErrUnreachable)
	require.Contains(t, err.Error(), "implementer: openai model m at "+url+"/v1")
}

// wrapper is a middleware-wrapped runner that exposes what it wraps.
type wrapper struct {
	Runner
	inner Runner
}

func (w wrapper) Unwrap() Runner { return w.inner }

func TestHealthCheckersThroughWrappers(t *testing.T) {
	o := healthRunner(t, "http://127.0.0.1:1/v1")
	sim := NewSim(SimOptions{})
	set := Set{
		Planner:     sim,
		Implementer: wrapper{Runner: Chain(o, WithRecover()), inner: wrapper{Runner: o, inner: o}},
		Judge:       o, // the same runner: checked once
	}
	hs := set.HealthCheckers()
	require.Len(t, hs, 1)
	require.Equal(t, "implementer", hs[0].Role)
	require.Same(t, o, hs[0].Check)
	require.Nil(t, HealthOf(Chain(o, WithRecover())), "a middleware without Unwrap hides it")
	require.Nil(t, HealthOf(nil))
}
