package forge_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/backoff"
	"github.com/droverhq/drover/internal/forge"
	"github.com/droverhq/drover/internal/forge/forgetest"
)

const token = "tok-s3cr3t-value"

// fast keeps retries quick in tests.
var fast = forge.WithRetry(backoff.Policy{Base: time.Millisecond, Max: 5 * time.Millisecond}, 4)

func client(t *testing.T, f *forgetest.Server, kind string, tok string, mod func(*forge.Config)) *forge.Client {
	t.Helper()
	cfg := forge.Config{Forge: kind, APIURL: f.APIURL(), Repo: "acme/app", TokenEnv: "FORGE_TOKEN"}
	if mod != nil {
		mod(&cfg)
	}
	c, err := forge.New(cfg, tok, fast)
	require.NoError(t, err)
	return c
}

// paths are the calls that open and update a request on each forge.
var paths = map[string]struct{ create, updateMethod, update string }{
	forge.GitHub: {"/repos/acme/app/pulls", http.MethodPatch, "/repos/acme/app/pulls/1"},
	forge.Gitea:  {"/api/v1/repos/acme/app/pulls", http.MethodPatch, "/api/v1/repos/acme/app/pulls/1"},
	forge.GitLab: {"/api/v4/projects/acme%2Fapp/merge_requests", http.MethodPut, "/api/v4/projects/acme%2Fapp/merge_requests/1"},
}

func TestOpenIsIdempotent(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		forge     string
		draft     bool
		wantTitle string
		labels    []string
	}{
		{forge.GitHub, false, "T1: add the thing", []string{"drover", "agent"}},
		{forge.GitHub, true, "T1: add the thing", nil},
		{forge.Gitea, false, "T1: add the thing", []string{"drover"}},
		{forge.Gitea, true, "WIP: T1: add the thing", nil},
		{forge.GitLab, false, "T1: add the thing", []string{"drover", "agent"}},
		{forge.GitLab, true, "Draft: T1: add the thing", nil},
	} {
		t.Run(tc.forge, func(t *testing.T) {
			t.Parallel()
			f := forgetest.New(t, tc.forge, "acme/app", token)
			c := client(t, f, tc.forge, token, func(c *forge.Config) { c.Draft, c.Labels = tc.draft, tc.labels })
			ctx := context.Background()
			req := forge.Request{Branch: "drover/wf/T1", Base: "main", Title: "T1: add the thing", Body: "first"}

			pr, err := c.Open(ctx, req)
			require.NoError(t, err)
			assert.Equal(t, 1, pr.Number)
			assert.Equal(t, tc.forge, pr.Forge)
			assert.Equal(t, tc.draft, pr.Draft)
			assert.True(t, strings.HasPrefix(pr.URL, f.URL+"/acme/app/"), pr.URL)

			req.Body = "second"
			again, err := c.Open(ctx, req)
			require.NoError(t, err)
			assert.Equal(t, pr, again, "a redelivery finds the same request")

			pulls := f.Pulls()
			require.Len(t, pulls, 1, "one request however often Open is called")
			got := pulls[0]
			assert.Equal(t, "drover/wf/T1", got.Head)
			assert.Equal(t, "main", got.Base)
			assert.Equal(t, tc.wantTitle, got.Title)
			assert.Equal(t, "second", got.Body, "the second call updated the request")
			assert.Equal(t, tc.draft, got.Draft)
			assert.ElementsMatch(t, tc.labels, got.Labels)
			p := paths[tc.forge]
			assert.Equal(t, 1, f.Count(http.MethodPost, p.create), "opened once")
			assert.Equal(t, 1, f.Count(p.updateMethod, p.update), "updated once")
		})
	}
}

// A create whose answer is lost (the forge opened the request, a proxy
// answered 502) is not sent again: the next try finds the request.
func TestOpenLostAnswerDoesNotOpenTwice(t *testing.T) {
	t.Parallel()
	for _, kind := range forge.Forges {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			f := forgetest.New(t, kind, "acme/app", token)
			f.LoseCreates(1)
			c := client(t, f, kind, token, nil)
			pr, err := c.Open(context.Background(), forge.Request{Branch: "drover/wf/T1", Base: "main", Title: "t", Body: "b"})
			require.NoError(t, err)
			assert.Equal(t, 1, pr.Number)
			assert.Len(t, f.Pulls(), 1)
			p := paths[kind]
			assert.Equal(t, 1, f.Count(http.MethodPost, p.create), "created once")
			assert.Equal(t, 1, f.Count(p.updateMethod, p.update), "then found and updated")
		})
	}
}

func TestOpenTwoBranchesTwoRequests(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t, forge.GitHub, "acme/app", token)
	c := client(t, f, forge.GitHub, token, nil)
	for _, b := range []string{"drover/wf/a", "drover/wf/b", "drover/wf/a"} {
		_, err := c.Open(context.Background(), forge.Request{Branch: b, Base: "main", Title: b, Body: "x"})
		require.NoError(t, err)
	}
	assert.Len(t, f.Pulls(), 2)
}

func TestOpenRefusedIsPermanentAndClear(t *testing.T) {
	t.Parallel()
	for _, kind := range forge.Forges {
		for _, tc := range []struct {
			name     string
			token    string
			reject   bool
			sentinel error
			says     string
		}{
			{"422", token, true, forge.ErrRejected, "No commits between main and drover/wf/T1"},
			{"401", "wrong-" + token, false, forge.ErrUnauthorized, "401 Unauthorized: Bad credentials"},
		} {
			t.Run(kind+"/"+tc.name, func(t *testing.T) {
				t.Parallel()
				f := forgetest.New(t, kind, "acme/app", token)
				if tc.reject {
					f.Reject("drover/wf/T1", "No commits between main and drover/wf/T1")
				}
				c := client(t, f, kind, tc.token, nil)
				_, err := c.Open(context.Background(), forge.Request{Branch: "drover/wf/T1", Base: "main", Title: "t", Body: "b"})
				require.Error(t, err)
				require.ErrorIs(t, err, forge.ErrPermanent)
				require.ErrorIs(t, err, tc.sentinel)
				assert.Contains(t, err.Error(), tc.says)
				assert.Contains(t, err.Error(), kind+" pull request for drover/wf/T1")
				assert.NotContains(t, err.Error(), token)
				assert.Empty(t, f.Pulls())
				// A permanent error is not tried again.
				assert.Len(t, f.Calls(), map[bool]int{true: 2, false: 1}[tc.reject])
			})
		}
	}
}

func TestOpenRetriesTransientFailures(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		answer forgetest.Answer
	}{
		{"502", forgetest.Answer{Status: http.StatusBadGateway, Body: "upstream down"}},
		{"429 Retry-After", forgetest.Answer{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"0"}}}},
		{"403 rate limit", forgetest.Answer{Status: http.StatusForbidden, Header: http.Header{
			"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1"}}, Body: `{"message":"API rate limit exceeded"}`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			f := forgetest.New(t, forge.GitHub, "acme/app", token)
			var n atomic.Int32
			f.Before(func(*http.Request) forgetest.Answer {
				if n.Add(1) <= 2 {
					return tc.answer
				}
				return forgetest.Answer{}
			})
			c := client(t, f, forge.GitHub, token, nil)
			pr, err := c.Open(context.Background(), forge.Request{Branch: "b", Base: "main", Title: "t", Body: "x"})
			require.NoError(t, err)
			assert.Equal(t, 1, pr.Number)
			assert.Len(t, f.Pulls(), 1)
		})
	}
}

func TestOpenGivesUpOnLastingServerErrors(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t, forge.GitLab, "acme/app", token)
	f.Before(func(*http.Request) forgetest.Answer {
		return forgetest.Answer{Status: http.StatusServiceUnavailable, Body: `{"message":"maintenance"}`}
	})
	c := client(t, f, forge.GitLab, token, nil)
	_, err := c.Open(context.Background(), forge.Request{Branch: "b", Base: "main", Title: "t", Body: "x"})
	require.Error(t, err)
	require.NotErrorIs(t, err, forge.ErrPermanent, "a forge that is down is retried later, the task not failed")
	assert.Contains(t, err.Error(), "4 tries: GET /projects/acme%2Fapp/merge_requests: 503 Service Unavailable: maintenance")
	assert.Len(t, f.Calls(), 4)
}

func TestOpenNetworkErrorIsTransient(t *testing.T) {
	t.Parallel()
	srv := httptest.NewServer(http.NotFoundHandler())
	url := srv.URL
	srv.Close()
	c, err := forge.New(forge.Config{Forge: forge.GitHub, APIURL: url, Repo: "acme/app", TokenEnv: "T"}, token, fast)
	require.NoError(t, err)
	_, err = c.Open(context.Background(), forge.Request{Branch: "b", Base: "main", Title: "t", Body: "x"})
	require.Error(t, err)
	require.NotErrorIs(t, err, forge.ErrPermanent)
	assert.NotContains(t, err.Error(), token)
}

func TestOpenStopsWithContext(t *testing.T) {
	t.Parallel()
	f := forgetest.New(t, forge.GitHub, "acme/app", token)
	ctx, cancel := context.WithCancel(context.Background())
	f.Before(func(*http.Request) forgetest.Answer {
		cancel()
		return forgetest.Answer{Status: http.StatusTooManyRequests, Header: http.Header{"Retry-After": {"60"}}}
	})
	c := client(t, f, forge.GitHub, token, nil)
	_, err := c.Open(ctx, forge.Request{Branch: "b", Base: "main", Title: "t", Body: "x"})
	assert.ErrorIs(t, err, context.Canceled)
}

func TestRedirectIsNotFollowed(t *testing.T) {
	t.Parallel()
	var got atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { got.Add(1) }))
	t.Cleanup(other.Close)
	f := forgetest.New(t, forge.GitLab, "acme/app", token)
	f.Before(func(r *http.Request) forgetest.Answer {
		return forgetest.Answer{Status: http.StatusTemporaryRedirect, Header: http.Header{"Location": {other.URL + "/steal"}}}
	})
	c := client(t, f, forge.GitLab, token, nil)
	_, err := c.Open(context.Background(), forge.Request{Branch: "b", Base: "main", Title: "t", Body: "x"})
	require.ErrorIs(t, err, forge.ErrRejected)
	assert.Zero(t, got.Load(), "the token's header went to another host")
}

func TestOpenTokenOnlyInItsHeader(t *testing.T) {
	t.Parallel()
	for _, kind := range forge.Forges {
		f := forgetest.New(t, kind, "acme/app", token)
		c := client(t, f, kind, token, nil)
		_, err := c.Open(context.Background(), forge.Request{Branch: "b", Base: "main", Title: "t", Body: "x"})
		require.NoError(t, err)
		for _, call := range f.Calls() {
			assert.NotContains(t, call.Path+"?"+call.Query, token)
			assert.Contains(t, call.Auth, token)
		}
	}
}

func TestNewNeedsToken(t *testing.T) {
	t.Parallel()
	_, err := forge.New(forge.Config{Forge: forge.GitHub, Repo: "a/b", TokenEnv: "GH_TOKEN"}, "")
	require.ErrorIs(t, err, forge.ErrInvalidConfig)
	assert.Contains(t, err.Error(), "$GH_TOKEN is empty")
}
