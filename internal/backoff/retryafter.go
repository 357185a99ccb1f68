package backoff

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// RetryAfter reads a Retry-After header: delay-seconds or an HTTP
// date (a date in the past means now). ok is false when v is absent or
// unreadable.
func RetryAfter(v string, now time.Time) (d time.Duration, ok bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, err := strconv.ParseInt(v, 10, 64); err == nil {
		if secs < 0 {
			return 0, false
		}
		if secs > int64(math.MaxInt64/time.Second) {
			return time.Duration(math.MaxInt64), true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}
