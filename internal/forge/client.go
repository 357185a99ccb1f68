package forge

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/internal/backoff"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

// maxResponse bounds the bytes read from one response.
const maxResponse = 1 << 20

// Request is the pull request to open or update for a pushed branch.
type Request struct {
	// Branch is the head: the task's pushed branch, in Config.Repo.
	Branch string
	// Base is the branch to merge into (Config.Base, else the workspace's
	// base ref).
	Base string
	// Title and Body are the request's text (see Title and Body).
	Title, Body string
}

// Client opens pull requests on one forge's repository.
type Client struct {
	cfg   Config
	token string
	api   api
	hc    *http.Client
	retry backoff.Policy
	tries int
	now   func() time.Time
	red   *redact.Redactor
}

// Option changes a Client.
type Option func(*Client)

// WithRetry sets the backoff between tries of a transient failure and how
// many tries one call gets in all (default: 1s doubling to 1m, jittered;
// DefaultTries). tries below 1 counts as 1.
func WithRetry(p backoff.Policy, tries int) Option {
	return func(c *Client) { c.retry, c.tries = p, max(tries, 1) }
}

// api is one forge's three calls.
type api interface {
	// auth sets the token and the forge's other request headers.
	auth(h http.Header, token string)
	// find returns the open request whose head is branch, nil if none.
	find(ctx context.Context, branch string) (*subjects.PullRequestResult, error)
	create(ctx context.Context, r Request) (*subjects.PullRequestResult, error)
	update(ctx context.Context, pr *subjects.PullRequestResult, r Request) (*subjects.PullRequestResult, error)
}

// New returns a client for cfg (validated here) that sends token. An
// empty token is an error naming the variable.
func New(cfg Config, token string, opts ...Option) (*Client, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if token == "" {
		return nil, fmt.Errorf("%w: pull_request.token_env: $%s is empty or not set", ErrInvalidConfig, cfg.TokenEnv)
	}
	if strings.ContainsAny(token, "\r\n") {
		return nil, fmt.Errorf("%w: pull_request.token_env: $%s holds a line break", ErrInvalidConfig, cfg.TokenEnv)
	}
	c := &Client{
		cfg:   cfg,
		token: token,
		hc: &http.Client{
			Timeout: DefaultTimeout,
			// A redirect is never followed: it could carry the token's
			// header to another host.
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
		},
		retry: backoff.Policy{Base: time.Second, Max: time.Minute, Jitter: true},
		tries: DefaultTries,
		now:   time.Now,
		red:   redact.New(token),
	}
	for _, o := range opts {
		o(c)
	}
	switch cfg.Forge {
	case GitHub:
		c.api = &github{c: c}
	case Gitea:
		c.api = &gitea{c: c}
	case GitLab:
		c.api = &gitlab{c: c}
	}
	return c, nil
}

// Config is the client's validated config.
func (c *Client) Config() Config { return c.cfg }

// repoPath is the repository's path under the GitHub and Gitea APIs.
func (c *Client) repoPath() string {
	owner, name, _ := strings.Cut(c.cfg.Repo, "/")
	return "/repos/" + url.PathEscape(owner) + "/" + url.PathEscape(name)
}

// draftTitle marks t as a draft with the forge's prefix when the config
// asks for drafts (forges without a draft flag read it from the title).
func (c *Client) draftTitle(prefix, t string) string {
	if c.cfg.Draft {
		return prefix + t
	}
	return t
}

// Open opens the pull request of r.Branch, or updates the open one (title
// and body; labels and base too on GitHub and GitLab) when there is one
// already: calling it again for the same branch never opens a second
// request. Errors never hold the token.
func (c *Client) Open(ctx context.Context, r Request) (subjects.PullRequestResult, error) {
	pr, err := c.open(ctx, r)
	if err != nil {
		return subjects.PullRequestResult{}, c.red.Error(fmt.Errorf("%s pull request for %s: %w", c.cfg.Forge, r.Branch, err))
	}
	pr.Forge = c.cfg.Forge
	return *pr, nil
}

func (c *Client) open(ctx context.Context, r Request) (*subjects.PullRequestResult, error) {
	if r.Branch == "" || r.Base == "" {
		return nil, fmt.Errorf("%w: %w: no branch or no base", ErrPermanent, ErrRejected)
	}
	// The find-then-create (or update) sequence is what is tried again, not
	// one call: a create whose answer was lost (a 502 from a proxy after
	// the forge opened the request) is found by the next try's find.
	for try := 1; ; try++ {
		pr, err := c.findThenWrite(ctx, r)
		var tr *transient
		if !errors.As(err, &tr) {
			return pr, err
		}
		if try >= c.tries {
			return nil, fmt.Errorf("%d tries: %w", c.tries, err)
		}
		wait := tr.wait
		if wait <= 0 {
			wait = c.retry.Delay(try)
		}
		if serr := backoff.Sleep(ctx, min(wait, MaxWait)); serr != nil {
			return nil, fmt.Errorf("%w (after: %w)", serr, err)
		}
	}
}

func (c *Client) findThenWrite(ctx context.Context, r Request) (*subjects.PullRequestResult, error) {
	pr, err := c.api.find(ctx, r.Branch)
	if err != nil {
		return nil, err
	}
	if pr != nil {
		return c.api.update(ctx, pr, r)
	}
	return c.api.create(ctx, r)
}

// transient is a failure another try may not have: a server error, a
// network error, a rate limit. wait is how long the forge asked to wait
// (zero: it did not say).
type transient struct {
	wait time.Duration
	err  error
}

func (e *transient) Error() string { return e.err.Error() }
func (e *transient) Unwrap() error { return e.err }

// call sends one request to the API (path is escaped already, relative to
// the API URL) with in as its JSON body (nil: none), and decodes the
// answer into out (nil: discarded). A failure another try may not have is
// a *transient.
func (c *Client) call(ctx context.Context, method, path string, query url.Values, in, out any) error {
	var body []byte
	if in != nil {
		var err error
		if body, err = json.Marshal(in); err != nil {
			return err
		}
	}
	target := c.cfg.APIURL + path
	if len(query) > 0 {
		target += "?" + query.Encode()
	}
	wait, err := c.once(ctx, method, target, body, out)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, ErrPermanent):
		return fmt.Errorf("%s %s: %w", method, path, err)
	case ctx.Err() != nil:
		return fmt.Errorf("%s %s: %w (after: %w)", method, path, ctx.Err(), err)
	}
	return &transient{wait: wait, err: fmt.Errorf("%s %s: %w", method, path, err)}
}

// once sends the request once. A transient failure returns how long to
// wait before the next try when the forge said so (zero: the backoff's).
func (c *Client) once(ctx context.Context, method, target string, body []byte, out any) (time.Duration, error) {
	req, err := http.NewRequestWithContext(ctx, method, target, bytes.NewReader(body))
	if err != nil {
		return 0, fmt.Errorf("%w: %w: %w", ErrPermanent, ErrRejected, err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("User-Agent", "drover")
	c.api.auth(req.Header, c.token)
	resp, err := c.hc.Do(req)
	if err != nil {
		if ctx.Err() != nil {
			return 0, ctx.Err()
		}
		return 0, err // network: transient
	}
	defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return 0, fmt.Errorf("%s: reading the answer: %w", resp.Status, err)
	}
	st := resp.StatusCode
	switch {
	case st >= 200 && st < 300:
		if out == nil || len(bytes.TrimSpace(data)) == 0 {
			return 0, nil
		}
		if err := json.Unmarshal(data, out); err != nil {
			return 0, fmt.Errorf("%w: %w: %s: the answer is not the JSON expected: %w", ErrPermanent, ErrRejected, resp.Status, err)
		}
		return 0, nil
	case st == http.StatusTooManyRequests, st == http.StatusForbidden && rateLimited(resp.Header):
		return c.rateWait(resp.Header), fmt.Errorf("%s (rate limited): %s", resp.Status, message(data))
	case st == http.StatusUnauthorized, st == http.StatusForbidden:
		return 0, fmt.Errorf("%w: %w: %s: %s", ErrPermanent, ErrUnauthorized, resp.Status, message(data))
	case st >= 500, st == http.StatusRequestTimeout:
		return c.rateWait(resp.Header), fmt.Errorf("%s: %s", resp.Status, message(data))
	case st >= 300 && st < 400:
		return 0, fmt.Errorf("%w: %w: %s: redirects are not followed (set api_url to the API's own URL)", ErrPermanent, ErrRejected, resp.Status)
	}
	return 0, fmt.Errorf("%w: %w: %s: %s", ErrPermanent, ErrRejected, resp.Status, message(data))
}

// rateLimited says whether a 403 is GitHub's rate limit rather than a
// refused token: a Retry-After, or the limit's remaining count at zero.
func rateLimited(h http.Header) bool {
	return h.Get("Retry-After") != "" || h.Get("X-RateLimit-Remaining") == "0" || h.Get("RateLimit-Remaining") == "0"
}

// rateWait is how long the forge asked to wait: Retry-After (seconds or
// an HTTP date), else the rate limit's reset time (Unix seconds) when the
// limit is spent; zero when it did not say.
func (c *Client) rateWait(h http.Header) time.Duration {
	if d, ok := backoff.RetryAfter(h.Get("Retry-After"), c.now()); ok {
		return min(d, MaxWait)
	}
	for _, p := range []string{"X-RateLimit-", "RateLimit-"} {
		if h.Get(p+"Remaining") != "0" {
			continue
		}
		if s, err := strconv.ParseInt(h.Get(p+"Reset"), 10, 64); err == nil {
			return max(time.Unix(s, 0).Sub(c.now()), 0)
		}
	}
	return 0
}

// message is the forge's explanation in an error answer: its message and
// errors fields when the answer is JSON, else the text; one line, bounded
// (the text is the forge's, shown in the task's failure).
func message(data []byte) string {
	var m map[string]any
	s := strings.TrimSpace(string(data))
	if json.Unmarshal(data, &m) == nil {
		var parts []string
		for _, k := range []string{"message", "error", "errors"} {
			v, ok := m[k]
			if !ok {
				continue
			}
			if str, ok := v.(string); ok {
				parts = append(parts, str)
				continue
			}
			b, _ := json.Marshal(v)
			parts = append(parts, string(b))
		}
		if len(parts) > 0 {
			s = strings.Join(parts, ": ")
		}
	}
	if s == "" {
		return "(no explanation)"
	}
	return redact.ClipRunes(redact.OneLine(s), 300)
}
