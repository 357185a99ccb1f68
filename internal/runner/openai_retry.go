package runner

import (
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"

	"github.com/droverhq/drover/internal/backoff"
	"github.com/droverhq/drover/internal/redact"
)

// Bounds of the response text an error quotes.
const (
	excerptRead  = 64 << 10 // read at most this much of an error body
	excerptBytes = 512      // quote at most this much of it
)

// statusFailure classifies a non-2xx response. 408, 429 and 5xx may be
// retried (Retry-After honoured); any other status wraps ErrPermanent.
func (o *OpenAI) statusFailure(resp *http.Response, body string, keySet, keySent bool) *failure {
	code := resp.StatusCode
	if code == http.StatusTooManyRequests || code == http.StatusRequestTimeout || code >= 500 {
		f := &failure{err: fmt.Errorf("HTTP %s: %s", resp.Status, body), retryable: true}
		f.retryAfter, f.hasAfter = backoff.RetryAfter(resp.Header.Get("Retry-After"), time.Now())
		return f
	}
	var hint string
	switch {
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		hint = fmt.Sprintf(": the API key in env var %s was rejected", o.cfg.APIKeyEnv)
		switch {
		case !keySet:
			hint += " (the variable is unset)"
		case !keySent:
			hint += " (the variable is empty)"
		}
	case code == http.StatusNotFound:
		hint = ": check base_url and model"
	}
	return &failure{err: Permanentf("HTTP %s%s: %s", resp.Status, hint, body)}
}

// backoff is the wait before retry n (from 1): RetryBase doubled n-1
// times, capped at RetryMax, with jitter over its upper half so workers
// rate-limited together do not retry together.
func (o *OpenAI) backoff(n int) time.Duration {
	return backoff.Policy{Base: o.cfg.RetryBase, Max: o.cfg.RetryMax, Jitter: true}.Delay(n)
}

// excerpt reads a bounded part of r for an error message: the key
// redacted, control characters as spaces, cut to excerptBytes on a rune
// boundary. The key is redacted before cutting, so no prefix of it
// survives the cut.
func excerpt(r io.Reader, key string) string {
	b, _ := io.ReadAll(io.LimitReader(r, excerptRead)) // a partial body still helps
	s := strings.ToValidUTF8(string(b), "\uFFFD")
	if key != "" {
		s = strings.ReplaceAll(s, key, "[redacted]")
	}
	s = strings.TrimSpace(strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return ' '
		}
		return r
	}, s))
	if s == "" {
		return "(empty body)"
	}
	return redact.Clip(s, excerptBytes, "…")
}
