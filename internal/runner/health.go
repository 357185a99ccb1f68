package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// HealthChecker is implemented by runners that depend on a service which
// can be down, such as a model endpoint. Health returns nil while the
// service can be reached, or why not. It must be cheap (cached), bounded
// in time, and safe for concurrent use: the worker asks it on every
// readiness probe and before fetching tasks, and stops fetching while it
// fails. A task is never failed for it.
type HealthChecker interface {
	Health(ctx context.Context) error
}

// Unwrapper is implemented by runners that wrap another (middlewares kept
// with what the wrapped runner offers), so its HealthChecker is found
// through the wrapping.
type Unwrapper interface {
	Unwrap() Runner
}

// maxUnwrap bounds how many wrappers HealthOf looks through.
const maxUnwrap = 16

// HealthOf returns the HealthChecker of r or of a runner r wraps (see
// Unwrapper), or nil when there is none.
func HealthOf(r Runner) HealthChecker {
	for range maxUnwrap {
		if r == nil {
			return nil
		}
		if h, ok := r.(HealthChecker); ok {
			return h
		}
		u, ok := r.(Unwrapper)
		if !ok {
			return nil
		}
		r = u.Unwrap()
	}
	return nil
}

// RoleHealth is one role's health checker.
type RoleHealth struct {
	Role  string
	Check HealthChecker
}

// HealthCheckers returns the health checkers of the set's runners, in
// role order, each checker once even when several roles share a runner.
func (s Set) HealthCheckers() []RoleHealth {
	var out []RoleHealth
	seen := map[HealthChecker]bool{}
	for _, r := range []struct {
		name string
		run  Runner
	}{{"planner", s.Planner}, {"implementer", s.Implementer}, {"judge", s.Judge}} {
		h := HealthOf(r.run)
		if h == nil || seen[h] {
			continue
		}
		seen[h] = true
		out = append(out, RoleHealth{Role: r.name, Check: h})
	}
	return out
}

// Defaults of the openai runner's health check.
const (
	// HealthTimeout bounds one health check request.
	HealthTimeout = 3 * time.Second
	// HealthCacheOK is how long a successful check is reused.
	HealthCacheOK = 10 * time.Second
	// HealthCacheFail is how long a failed check is reused: shorter, so
	// the worker resumes soon after the endpoint is back.
	HealthCacheFail = time.Second
)

// ErrUnreachable is returned by Health when a runner's service cannot be
// reached.
var ErrUnreachable = errors.New("endpoint unreachable")

// health caches the result of a check; concurrent callers share one
// check rather than each making their own.
type health struct {
	mu  sync.Mutex
	at  time.Time
	err error
	now func() time.Time
}

// get returns the cached result while it is fresh, else runs check.
func (h *health) get(ctx context.Context, check func(context.Context) error) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now
	if h.now != nil {
		now = h.now
	}
	ttl := HealthCacheOK
	if h.err != nil {
		ttl = HealthCacheFail
	}
	if !h.at.IsZero() && now().Sub(h.at) < ttl {
		return h.err
	}
	cctx, cancel := context.WithTimeout(ctx, HealthTimeout)
	defer cancel()
	h.err = check(cctx)
	h.at = now()
	return h.err
}

// Health implements HealthChecker: a GET of {base}/models, without the API
// key (any answer proves the endpoint is there: 401 and 404 are fine), at
// most HealthTimeout, cached for HealthCacheOK (HealthCacheFail after a
// failure). A transport error or a 5xx answer is ErrUnreachable, naming
// the model and the base URL (credentials hidden).
func (o *OpenAI) Health(ctx context.Context) error {
	return o.health.get(ctx, o.checkHealth)
}

// checkHealth makes one health request.
func (o *OpenAI) checkHealth(ctx context.Context) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, o.cfg.BaseURL+"/models", nil)
	if err != nil {
		return o.errorf("%w: %v", ErrUnreachable, err)
	}
	resp, err := o.opts.client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			err = fmt.Errorf("no answer within %s", HealthTimeout)
		}
		return o.errorf("%w: %v", ErrUnreachable, err)
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	_ = resp.Body.Close()
	if resp.StatusCode >= 500 {
		return o.errorf("%w: GET /models answered %s", ErrUnreachable, resp.Status)
	}
	return nil
}

var _ HealthChecker = (*OpenAI)(nil)
