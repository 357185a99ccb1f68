package forge

import (
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

func TestRateWait(t *testing.T) {
	t.Parallel()
	now := time.Unix(1_000_000, 0)
	c := &Client{now: func() time.Time { return now }}
	for _, tc := range []struct {
		name string
		h    http.Header
		want time.Duration
	}{
		{"nothing said", http.Header{}, 0},
		{"Retry-After seconds", http.Header{"Retry-After": {"7"}}, 7 * time.Second},
		{"Retry-After capped", http.Header{"Retry-After": {"86400"}}, MaxWait},
		{"Retry-After date", http.Header{"Retry-After": {now.Add(90 * time.Second).UTC().Format(http.TimeFormat)}}, 90 * time.Second},
		{"Retry-After date passed", http.Header{"Retry-After": {now.Add(-time.Hour).UTC().Format(http.TimeFormat)}}, 0},
		{"Retry-After garbage", http.Header{"Retry-After": {"soon"}}, 0},
		{"GitHub reset", http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"1000030"}}, 30 * time.Second},
		{"GitHub reset, limit not spent", http.Header{"X-Ratelimit-Remaining": {"12"}, "X-Ratelimit-Reset": {"1000030"}}, 0},
		{"GitLab reset", http.Header{"Ratelimit-Remaining": {"0"}, "Ratelimit-Reset": {"1000004"}}, 4 * time.Second},
		{"reset passed", http.Header{"X-Ratelimit-Remaining": {"0"}, "X-Ratelimit-Reset": {"999999"}}, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, c.rateWait(tc.h))
		})
	}
}

func TestRateLimited(t *testing.T) {
	t.Parallel()
	assert.False(t, rateLimited(http.Header{}), "a plain 403 is a refused token")
	assert.True(t, rateLimited(http.Header{"Retry-After": {"1"}}))
	assert.True(t, rateLimited(http.Header{"X-Ratelimit-Remaining": {"0"}}))
	assert.False(t, rateLimited(http.Header{"X-Ratelimit-Remaining": {"40"}}))
}

func TestMessage(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{"message":"Validation Failed","errors":[{"message":"No commits between main and x"}]}`, `Validation Failed: [{"message":"No commits between main and x"}]`},
		{`{"message":["Another open merge request already exists"]}`, `["Another open merge request already exists"]`},
		{`{"error":"invalid_token"}`, "invalid_token"},
		{"plain\ntext", "plain text"},
		{"", "(no explanation)"},
	} {
		assert.Equal(t, tc.want, message([]byte(tc.in)))
	}
	long := make([]byte, 5000)
	for i := range long {
		long[i] = 'x'
	}
	assert.Len(t, []rune(message(long)), 300)
}
