package runner

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/backoff"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

func TestOpenAIRetryAfter(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name       string
		retryAfter string
		want       time.Duration
	}{
		{"seconds", "1", time.Second},
		{"capped at RetryMax", "3600", 5 * time.Second},
		{"HTTP date in the past", "Mon, 02 Jan 2006 15:04:05 GMT", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			b := setupOpenAI(t,
				reply(http.StatusTooManyRequests, `{"error":{"message":"rate limited"}}`, "Retry-After", tc.retryAfter),
				completion(testPlanOut))
			o := b.runner(t, subjects.RolePlanner, OpenAIConfig{RetryBase: time.Millisecond, RetryMax: 5 * time.Second})
			res, err := o.Run(context.Background(), openAIReq(t, subjects.RolePlanner))
			require.NoError(t, err)
			require.Len(t, b.requests(), 2)
			require.Equal(t, []time.Duration{tc.want}, b.delays())
			require.Equal(t, 1, res.Metadata["retries"])
		})
	}
}

func TestOpenAIServerErrorThenSuccess(t *testing.T) {
	t.Parallel()
	b := setupOpenAI(t,
		reply(http.StatusInternalServerError, "boom"),
		reply(http.StatusServiceUnavailable, "overloaded"),
		completion(testChangeOut))
	base := 100 * time.Millisecond
	o := b.runner(t, subjects.RoleImplementer, OpenAIConfig{RetryBase: base, RetryMax: time.Second})
	res, err := o.Run(context.Background(), openAIReq(t, subjects.RoleImplementer))
	require.NoError(t, err)
	require.Len(t, b.requests(), 3)
	require.Equal(t, 2, res.Metadata["retries"])

	// Exponential backoff with jitter over the upper half.
	d := b.delays()
	require.Len(t, d, 2)
	require.True(t, d[0] >= base/2 && d[0] <= base, "first delay %s", d[0])
	require.True(t, d[1] >= base && d[1] <= 2*base, "second delay %s", d[1])
}

func TestOpenAIGivesUp(t *testing.T) {
	t.Parallel()
	b := setupOpenAI(t, reply(http.StatusBadGateway, "bad gateway"))
	o := b.runner(t, subjects.RoleJudge, OpenAIConfig{MaxRetries: 2})
	_, err := o.Run(context.Background(), openAIReq(t, subjects.RoleJudge))
	require.Error(t, err)
	require.NotErrorIs(t, err, ErrPermanent, "running out of retries is not permanent: %v", err)
	require.Len(t, b.requests(), 3)
	require.Len(t, b.delays(), 2)
	require.ErrorContains(t, err, "judge: openai model gpt-test at "+b.srv.URL+"/v1")
	require.ErrorContains(t, err, "gave up after 3 attempts")
	require.ErrorContains(t, err, "502")
}

func TestOpenAINoRetries(t *testing.T) {
	t.Parallel()
	b := setupOpenAI(t, reply(http.StatusInternalServerError, "boom"))
	o := b.runner(t, subjects.RolePlanner, OpenAIConfig{MaxRetries: -1})
	_, err := o.Run(context.Background(), openAIReq(t, subjects.RolePlanner))
	require.ErrorContains(t, err, "gave up after 1 attempts")
	require.Len(t, b.requests(), 1)
	require.Empty(t, b.delays())
}

func TestOpenAIRequestTimeout(t *testing.T) {
	t.Parallel()
	done := make(chan struct{})
	b := setupOpenAI(t, func(_ http.ResponseWriter, r *http.Request) {
		select { // hang until the client gives up on this request
		case <-r.Context().Done():
		case <-done:
		}
	})
	t.Cleanup(func() { close(done) }) // runs before the server's Close
	// Long enough for each request to be on the wire before the client
	// gives up on it, on a loaded machine too.
	o := b.runner(t, subjects.RolePlanner, OpenAIConfig{RequestTimeout: 200 * time.Millisecond, MaxRetries: 2})
	_, err := o.Run(context.Background(), openAIReq(t, subjects.RolePlanner))
	require.ErrorContains(t, err, "request timed out after 200ms")
	require.ErrorContains(t, err, "gave up after 3 attempts")
	require.NotErrorIs(t, err, ErrPermanent)
	// The server records a request once it has read its body, which for
	// the last one can be after the client has given up on it.
	require.Eventually(t, func() bool { return len(b.requests()) == 3 }, 5*time.Second, 5*time.Millisecond,
		"the server did not see 3 requests")
	require.Len(t, b.requests(), 3, "no request after the last attempt")
}

func TestOpenAITransportError(t *testing.T) {
	t.Parallel()
	b := setupOpenAI(t, completion(testPlanOut))
	o := b.runner(t, subjects.RolePlanner, OpenAIConfig{MaxRetries: 1})
	b.srv.Close() // connection refused from now on
	_, err := o.Run(context.Background(), openAIReq(t, subjects.RolePlanner))
	require.ErrorContains(t, err, "gave up after 2 attempts")
	require.NotErrorIs(t, err, ErrPermanent)
	require.Len(t, b.delays(), 1)
}

// TestOpenAICancelStopsRetries uses the real, timer-based sleep: a long
// Retry-After must not hold Run once ctx is cancelled.
func TestOpenAICancelStopsRetries(t *testing.T) {
	t.Parallel()
	served := make(chan struct{}, 1)
	b := setupOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		reply(http.StatusServiceUnavailable, "busy", "Retry-After", "3600")(w, r)
		served <- struct{}{}
	})
	o := b.runner(t, subjects.RolePlanner, OpenAIConfig{RetryMax: time.Hour}, WithSleep(backoff.Sleep))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	req := openAIReq(t, subjects.RolePlanner)
	errc := make(chan error, 1)
	go func() {
		_, err := o.Run(ctx, req)
		errc <- err
	}()
	natstest.Recv(t, served, 30*time.Second)
	cancel()
	select {
	case err := <-errc:
		require.ErrorIs(t, err, context.Canceled)
		require.NotErrorIs(t, err, ErrPermanent)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after ctx was cancelled")
	}
	require.Len(t, b.requests(), 1)
}

func TestOpenAIBackoff(t *testing.T) {
	t.Parallel()
	o := &OpenAI{cfg: OpenAIConfig{RetryBase: time.Second, RetryMax: 10 * time.Second}}
	for n, ceiling := range map[int]time.Duration{1: time.Second, 2: 2 * time.Second, 4: 8 * time.Second, 5: 10 * time.Second, 200: 10 * time.Second} {
		for range 20 {
			d := o.backoff(n)
			require.True(t, d >= ceiling/2 && d <= ceiling, "retry %d: %s outside [%s, %s]", n, d, ceiling/2, ceiling)
		}
	}
}
