package console_test

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/console"
	"github.com/droverhq/drover/internal/workflow"
	"github.com/droverhq/drover/subjects"
)

// routeSamples fill a route's wildcards with values that reach its
// handler; another wildcard gets "x".
var routeSamples = map[string]string{"wf": "wf-host", "task": "T1", "action": "pause", "seq": "1", "decision": "approve"}

var wildcard = regexp.MustCompile(`\{([a-z]+)(\.\.\.)?\}`)

// routeRequest is a method and a path that reach a route's pattern: its
// wildcards filled, a subtree ("/static/") with a file under it.
func routeRequest(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	subtree := strings.HasSuffix(path, "/") && !strings.HasSuffix(path, "{$}")
	path = strings.ReplaceAll(path, "{$}", "")
	path = wildcard.ReplaceAllStringFunc(path, func(w string) string {
		if v, ok := routeSamples[wildcard.FindStringSubmatch(w)[1]]; ok {
			return v
		}
		return "x"
	})
	if subtree {
		path += "app.css"
	}
	return method, path
}

// send makes one request with the given Host and headers; it returns the
// status, the headers and at most 4 KiB of the body (an event stream is
// cut there).
func (f *fixture) send(method, path, host string, form url.Values, header ...string) (int, http.Header, string) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(f.t.Context(), 10*time.Second)
	defer cancel()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(ctx, method, f.srv.URL+path, body)
	require.NoError(f.t, err)
	req.Host = host
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	c := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := c.Do(req)
	require.NoError(f.t, err, "%s %s Host %s", method, path, host)
	defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
	b := make([]byte, 4096)
	n, _ := io.ReadAtLeast(resp.Body, b, 1)
	return resp.StatusCode, resp.Header, string(b[:n])
}

// A page whose DNS name is rebound to 127.0.0.1 sends its own name as
// Host: every route the console registers (pages, assets, the event
// stream, actions), and any other path, refuses every Host it does not
// serve, with or without auth, before anything else answers; the loopback
// names with the console's port are served.
func TestForeignHostRefusedOnEveryRoute(t *testing.T) {
	for _, tc := range []struct {
		name string
		auth console.Auth
		cred []string // the header a client of this console sends
	}{
		{"no auth", console.Auth{}, nil},
		{"bearer auth", console.Auth{Token: "tok"}, []string{"Authorization", "Bearer tok"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.auth)
			f.putTask("wf-host", "T1", subjects.StateRunning, "planner")
			u, err := url.Parse(f.srv.URL)
			require.NoError(t, err)
			port := u.Port()
			routes := f.cs.Routes()
			for _, want := range []string{"GET /{$}", "GET /static/", "GET /events", "POST /workflows/{wf}/{action}",
				"POST /reviews/{wf}/{task}/{decision}", "POST /dlq/{seq}/redrive"} {
				require.Contains(t, routes, want, "the routes list every kind of route")
			}
			routes = append(routes, "GET /nope", "POST /nope/x")
			foreign := []string{"evil.test:" + port, "evil.test", "localhost:1", "127.0.0.1.evil.test:" + port,
				"localhost.:" + port, "dev.localhost:" + port, "[::2]:" + port, "0.0.0.0:" + port, "10.1.2.3:" + port}
			served := []string{"127.0.0.1:" + port, "localhost:" + port, "[::1]:" + port}
			form := url.Values{"csrf": {"x"}, "comment": {"ok"}, "confirm": {"yes"}}
			for _, pattern := range routes {
				method, path := routeRequest(pattern)
				var body url.Values
				if method == http.MethodPost {
					body = form
				}
				for _, host := range foreign {
					header := append([]string{"Origin", "http://" + host}, tc.cred...)
					code, h, text := f.send(method, path, host, body, header...)
					assert.Equal(t, http.StatusMisdirectedRequest, code, "%s %s Host %s", method, path, host)
					assert.Equal(t, "421 misdirected request: this console does not serve that Host (see --allowed-host)\n", text,
						"%s %s Host %s", method, path, host)
					assert.Equal(t, "text/plain; charset=utf-8", h.Get("Content-Type"))
					assert.Empty(t, h.Values("Set-Cookie"), "no session for a refused Host")
				}
				for _, host := range served {
					code, _, _ := f.send(method, path, host, body, append([]string{"Origin", "http://" + host}, tc.cred...)...)
					assert.NotEqual(t, http.StatusMisdirectedRequest, code, "%s %s Host %s", method, path, host)
					assert.NotEqual(t, http.StatusUnauthorized, code, "%s %s Host %s", method, path, host)
				}
			}
		})
	}
}

// The rebinding attack end to end, in raw HTTP: the attacker's page,
// served as evil.test and resolved to 127.0.0.1, reads a board for its
// CSRF token and posts a pause as its own origin. Even holding a real
// session's cookie and token, it gets nothing and pauses nothing.
func TestRebindingPageCannotAct(t *testing.T) {
	f := newFixture(t, console.Auth{})
	f.putTask("wf-host", "T1", subjects.StateRunning, "planner")
	u, err := url.Parse(f.srv.URL)
	require.NoError(t, err)
	evil := "evil.test:" + u.Port()
	var page string
	require.Eventually(t, func() bool {
		_, _, page = f.send(http.MethodGet, "/workflows/wf-host", u.Host, nil)
		return csrfField.MatchString(page)
	}, 10*time.Second, 20*time.Millisecond)

	code, _, page := f.send(http.MethodGet, "/workflows/wf-host", evil, nil)
	require.Equal(t, http.StatusMisdirectedRequest, code)
	require.NotRegexp(t, csrfField, page)

	// A token and cookie of a real session (the worst case: the rebinding
	// page cannot read them, being another origin).
	c := f.browser()
	_, page = f.get(c, "/workflows/wf-host")
	token := csrfField.FindStringSubmatch(page)[1]
	cookies := c.Jar.Cookies(u)
	require.NotEmpty(t, cookies)
	code, _, _ = f.send(http.MethodPost, "/workflows/wf-host/pause", evil, url.Values{"csrf": {token}},
		"Origin", "http://"+evil, "Sec-Fetch-Site", "same-origin", "Cookie", cookies[0].String())
	require.Equal(t, http.StatusMisdirectedRequest, code)
	st, err := workflow.GetStatus(t.Context(), f.kv, "wf-host")
	require.NoError(t, err)
	require.Equal(t, subjects.StateRunning, st.State.State, "the rebinding page paused the workflow")
}

// Requests a browser never sends but a raw client can: no Host at all
// (HTTP/1.0), and an absolute-form target naming another host, whose host
// is the request's Host.
func TestRawRequestsWithoutOurHost(t *testing.T) {
	f := newFixture(t, console.Auth{})
	addr := strings.TrimPrefix(f.srv.URL, "http://")
	for _, raw := range []string{
		"GET / HTTP/1.0\r\n\r\n",
		"GET /events HTTP/1.0\r\n\r\n",
		"GET http://evil.test/ HTTP/1.1\r\nHost: " + addr + "\r\nConnection: close\r\n\r\n",
		"POST http://evil.test/workflows/wf/pause HTTP/1.1\r\nHost: " + addr + "\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
	} {
		conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
		require.NoError(t, err)
		require.NoError(t, conn.SetDeadline(time.Now().Add(10*time.Second)))
		_, err = io.WriteString(conn, raw)
		require.NoError(t, err)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		require.NoError(t, err, "%q", raw)
		assert.Equal(t, http.StatusMisdirectedRequest, resp.StatusCode, "%q", raw)
		_ = conn.Close()
	}
}

// At most MaxEventStreams event streams are live: one more is answered
// 503 with Retry-After, and a slot is free again once a stream ends.
func TestEventStreamCap(t *testing.T) {
	f := newFixtureWith(t, func(c *console.Config) { c.MaxEventStreams = 2 })
	open := func() (*http.Response, context.CancelFunc) {
		ctx, cancel := context.WithTimeout(t.Context(), 20*time.Second)
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/events", nil)
		require.NoError(t, err)
		resp, err := http.DefaultClient.Do(req)
		require.NoError(t, err)
		return resp, func() { cancel(); _ = resp.Body.Close() }
	}
	first, closeFirst := open()
	defer closeFirst()
	second, closeSecond := open()
	defer closeSecond()
	require.Equal(t, http.StatusOK, first.StatusCode)
	require.Equal(t, http.StatusOK, second.StatusCode)

	third, closeThird := open()
	body, _ := io.ReadAll(third.Body)
	closeThird()
	require.Equal(t, http.StatusServiceUnavailable, third.StatusCode, "a stream over the cap")
	assert.Equal(t, "10", third.Header.Get("Retry-After"))
	assert.Contains(t, string(body), "too many live event streams")

	closeFirst()
	require.Eventually(t, func() bool {
		resp, done := open()
		defer done()
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 10*time.Millisecond, "a slot frees when a stream ends")
}
