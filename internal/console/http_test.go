package console_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/console"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/workflow"
	"github.com/droverhq/drover/subjects"
)

var names = subjects.MustNames(subjects.DefaultPrefix)

// fixture is a console on a provisioned embedded server, with a workflow
// controller answering control requests, served by httptest.
type fixture struct {
	t   *testing.T
	nc  *nats.Conn
	js  jetstream.JetStream
	kv  jetstream.KeyValue
	srv *httptest.Server
	cs  *console.Server
}

func newFixture(t *testing.T, auth console.Auth) *fixture {
	t.Helper()
	return newFixtureWith(t, func(c *console.Config) { c.Auth = auth })
}

// newFixtureWith is newFixture with the console's configuration changed by
// set.
func newFixtureWith(t *testing.T, set func(*console.Config)) *fixture {
	t.Helper()
	_, nc, js, res := natstest.Provisioned(t)
	ctl, err := workflow.NewController(workflow.Deps{NC: nc, JS: js, Names: names, State: res.State, Audit: res.Audit, Log: natstest.Quiet()})
	require.NoError(t, err)
	stop, err := ctl.Start(t.Context())
	require.NoError(t, err)
	t.Cleanup(stop)
	cfg := console.Config{ControlTimeout: 5 * time.Second}
	set(&cfg)
	cs, err := console.New(console.Deps{NC: nc, JS: js, Names: names, Log: natstest.Quiet()}, cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = cs.Run(ctx) }()
	t.Cleanup(func() { cancel(); natstest.Recv(t, done, 30*time.Second) })
	select {
	case <-cs.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("the console did not load the state bucket")
	}
	srv := httptest.NewServer(cs.Handler())
	t.Cleanup(srv.Close)
	return &fixture{t: t, nc: nc, js: js, kv: res.State, srv: srv, cs: cs}
}

// putTask writes a task's state as a worker would.
func (f *fixture) putTask(wf, task, state, stage string) {
	f.t.Helper()
	b, _ := json.Marshal(subjects.TaskState{Workflow: wf, Task: task, State: state, Stage: stage, Worker: "w1",
		StartedAt: time.Now(), UpdatedAt: time.Now()})
	_, err := f.kv.Put(context.Background(), subjects.StateKey(wf, task), b)
	require.NoError(f.t, err)
}

// browser is a client with a cookie jar that does not follow redirects.
func (f *fixture) browser() *http.Client {
	jar, _ := cookiejar.New(nil)
	return &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
}

func (f *fixture) get(c *http.Client, path string) (*http.Response, string) {
	f.t.Helper()
	resp, err := c.Get(f.srv.URL + path)
	require.NoError(f.t, err)
	defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
	b, err := io.ReadAll(resp.Body)
	require.NoError(f.t, err)
	return resp, string(b)
}

// post sends a form as a browser does, with the header's pairs (name,
// value, ...): a browser's form sends at least its Origin.
func (f *fixture) post(c *http.Client, path string, form url.Values, header ...string) *http.Response {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(f.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	resp, err := c.Do(req)
	require.NoError(f.t, err)
	return resp
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// Every state-changing request needs the session's CSRF token and this
// origin (its Origin, else its Referer); with both, the action goes
// through the control subject and its audit event names the console user.
func TestPostNeedsCSRFToken(t *testing.T) {
	f := newFixture(t, console.Auth{})
	f.putTask("wf-csrf", "T1", subjects.StateRunning, "planner")
	c := f.browser()
	var page string
	require.Eventually(t, func() bool {
		_, page = f.get(c, "/workflows/wf-csrf")
		return csrfField.MatchString(page)
	}, 10*time.Second, 20*time.Millisecond)
	token := csrfField.FindStringSubmatch(page)[1]
	other := f.browser()
	_, otherPage := f.get(other, "/workflows/wf-csrf")
	otherToken := csrfField.FindStringSubmatch(otherPage)[1]
	require.NotEqual(t, token, otherToken, "each session has its own token")

	post := func(c *http.Client, form url.Values, header ...string) *http.Response {
		resp := f.post(c, "/workflows/wf-csrf/pause", form, header...)
		_ = resp.Body.Close()
		return resp
	}
	origin := f.srv.URL
	localhost := strings.Replace(origin, "127.0.0.1", "localhost", 1)
	for _, tc := range []struct {
		name   string
		client *http.Client
		form   url.Values
		header []string
	}{
		{"no token", c, url.Values{}, []string{"Origin", origin}},
		{"empty token", c, url.Values{"csrf": {""}}, []string{"Origin", origin}},
		{"wrong token", c, url.Values{"csrf": {wrongToken(token)}}, []string{"Origin", origin}},
		{"another session's token", c, url.Values{"csrf": {otherToken}}, []string{"Origin", origin}},
		{"token without the session cookie", &http.Client{}, url.Values{"csrf": {token}}, []string{"Origin", origin}},
		{"neither Origin nor Referer", c, url.Values{"csrf": {token}}, nil},
		{"another origin", c, url.Values{"csrf": {token}}, []string{"Origin", "http://evil.example"}},
		{"an opaque origin", c, url.Values{"csrf": {token}}, []string{"Origin", "null"}},
		{"another port", c, url.Values{"csrf": {token}}, []string{"Origin", "http://127.0.0.1:1"}},
		{"another loopback name", c, url.Values{"csrf": {token}}, []string{"Origin", localhost}},
		{"another scheme", c, url.Values{"csrf": {token}}, []string{"Origin", "ftp://" + strings.TrimPrefix(origin, "http://")}},
		{"another origin's Referer", c, url.Values{"csrf": {token}}, []string{"Referer", "http://evil.example/x"}},
		{"this Referer, another Origin", c, url.Values{"csrf": {token}}, []string{"Referer", origin + "/workflows/wf-csrf", "Origin", "http://evil.example"}},
		{"cross-site fetch", c, url.Values{"csrf": {token}}, []string{"Origin", origin, "Sec-Fetch-Site", "cross-site"}},
	} {
		assert.Equal(t, http.StatusForbidden, post(tc.client, tc.form, tc.header...).StatusCode, tc.name)
	}
	st, err := workflow.GetStatus(t.Context(), f.kv, "wf-csrf")
	require.NoError(t, err)
	require.Equal(t, subjects.StateRunning, st.State.State, "no refused request paused the workflow")

	resp := post(c, url.Values{"csrf": {token}, "reason": {"lunch"}}, "Referer", origin+"/workflows/wf-csrf")
	require.Equal(t, http.StatusSeeOther, resp.StatusCode, "this Referer stands for a missing Origin")
	st, err = workflow.GetStatus(t.Context(), f.kv, "wf-csrf")
	require.NoError(t, err)
	require.Equal(t, subjects.StatePaused, st.State.State)
	resp = f.post(c, "/workflows/wf-csrf/resume", url.Values{"csrf": {token}}, "Origin", origin, "Sec-Fetch-Site", "same-origin")
	_ = resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	st, err = workflow.GetStatus(t.Context(), f.kv, "wf-csrf")
	require.NoError(t, err)
	require.Equal(t, subjects.StateRunning, st.State.State)

	var ev subjects.AuditEvent
	require.NoError(t, audit.Replay(t.Context(), f.js, names, audit.Query{Workflow: "wf-csrf", Type: subjects.EventWorkflowPaused},
		func(r audit.Record) error { ev = r.Event; return nil }))
	var md map[string]any
	require.NoError(t, json.Unmarshal(ev.Metadata, &md))
	assert.Equal(t, "console:anonymous", md["actor"])
	assert.Equal(t, "lunch", ev.Reasoning)
}

// Cancel asks for a confirmation first: a POST without confirm=yes only
// renders the question.
func TestCancelAsksFirst(t *testing.T) {
	f := newFixture(t, console.Auth{})
	f.putTask("wf-cancel", "T1", subjects.StateRunning, "planner")
	c := f.browser()
	var page string
	require.Eventually(t, func() bool {
		_, page = f.get(c, "/workflows/wf-cancel")
		return csrfField.MatchString(page)
	}, 10*time.Second, 20*time.Millisecond)
	token := csrfField.FindStringSubmatch(page)[1]
	resp := f.post(c, "/workflows/wf-cancel/cancel", url.Values{"csrf": {token}}, "Origin", f.srv.URL)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, string(b), `name="confirm" value="yes"`)
	st, err := workflow.GetStatus(t.Context(), f.kv, "wf-cancel")
	require.NoError(t, err)
	assert.Equal(t, subjects.StateRunning, st.State.State)

	resp = f.post(c, "/workflows/wf-cancel/cancel", url.Values{"csrf": {token}, "confirm": {"yes"}}, "Origin", f.srv.URL)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	st, err = workflow.GetStatus(t.Context(), f.kv, "wf-cancel")
	require.NoError(t, err)
	assert.Equal(t, subjects.StateCancelled, st.State.State)
}

// Every answer carries the security headers; the session cookie is
// HttpOnly and SameSite=Strict.
func TestSecurityHeaders(t *testing.T) {
	f := newFixture(t, console.Auth{})
	f.putTask("wf-h", "T1", subjects.StateRunning, "judge")
	for _, path := range []string{"/", "/workflows", "/workflows/wf-h", "/tasks/wf-h/T1", "/audit", "/audit?workflow=wf-h&type=task_failed",
		"/dlq", "/reviews", "/static/app.js", "/nope"} {
		resp, body := f.get(f.browser(), path)
		assert.NotContains(t, body, "ZgotmplZ", "%s: a value html/template refused", path)
		h := resp.Header
		assert.Contains(t, h.Get("Content-Security-Policy"), "script-src 'self'", path)
		assert.NotContains(t, h.Get("Content-Security-Policy"), "unsafe-inline", path)
		assert.Equal(t, "DENY", h.Get("X-Frame-Options"), path)
		assert.Equal(t, "nosniff", h.Get("X-Content-Type-Options"), path)
	}
	resp, _ := f.get(f.browser(), "/")
	require.Len(t, resp.Cookies(), 1)
	ck := resp.Cookies()[0]
	assert.True(t, ck.HttpOnly)
	assert.Equal(t, http.SameSiteStrictMode, ck.SameSite)
}

func TestAuth(t *testing.T) {
	f := newFixture(t, console.Auth{User: "ann", Password: "s3cret", Token: "tok"})
	for _, tc := range []struct {
		name string
		set  func(*http.Request)
		want int
	}{
		{"none", func(*http.Request) {}, http.StatusUnauthorized},
		{"wrong password", func(r *http.Request) { r.SetBasicAuth("ann", "nope") }, http.StatusUnauthorized},
		{"wrong user", func(r *http.Request) { r.SetBasicAuth("bob", "s3cret") }, http.StatusUnauthorized},
		{"basic", func(r *http.Request) { r.SetBasicAuth("ann", "s3cret") }, http.StatusOK},
		{"wrong token", func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok2") }, http.StatusUnauthorized},
		{"bearer", func(r *http.Request) { r.Header.Set("Authorization", "Bearer tok") }, http.StatusOK},
	} {
		for _, path := range []string{"/", "/events", "/static/app.css"} {
			req, err := http.NewRequest(http.MethodGet, f.srv.URL+path, nil)
			require.NoError(t, err)
			tc.set(req)
			ctx, cancel := context.WithTimeout(t.Context(), 5*time.Second)
			resp, err := http.DefaultClient.Do(req.WithContext(ctx))
			require.NoError(t, err)
			assert.Equal(t, tc.want, resp.StatusCode, "%s %s", tc.name, path)
			_ = resp.Body.Close()
			cancel()
		}
	}
}

// Untrusted text (a workflow's reason, IDs in the URL) is escaped.
func TestEscapesUntrustedText(t *testing.T) {
	f := newFixture(t, console.Auth{})
	f.putTask("wf-xss", "T1", subjects.StateFailed, subjects.StageDone)
	b, _ := json.Marshal(subjects.WorkflowState{State: subjects.StatePaused, Reason: `<script>alert(1)</script><img src=x onerror=alert(2)>`})
	_, err := f.kv.Put(t.Context(), subjects.StateKey("wf-xss", subjects.Reserved), b)
	require.NoError(t, err)
	c := f.browser()
	var page string
	require.Eventually(t, func() bool {
		_, page = f.get(c, "/workflows/wf-xss")
		return strings.Contains(page, "Reason:")
	}, 10*time.Second, 20*time.Millisecond)
	assert.NotContains(t, page, "<script>alert")
	assert.NotContains(t, page, "<img src=x")
	assert.Contains(t, page, "&lt;script&gt;alert(1)&lt;/script&gt;&lt;img src=x onerror=alert(2)&gt;")

	_, page = f.get(c, "/audit?workflow=%3Cscript%3Ex&actor=%3Cb%3E")
	assert.NotContains(t, page, "<script>x")
	assert.NotContains(t, page, "<b>")
	assert.Contains(t, page, "&lt;b&gt;")
}

// A change between a page's render and its event stream is not lost: the
// stream starts with the changes since the page's revision.
func TestEventsCatchUp(t *testing.T) {
	f := newFixture(t, console.Auth{})
	f.putTask("wf-gap", "T1", subjects.StateRunning, "planner")
	c := f.browser()
	rev := regexp.MustCompile(`data-rev="([0-9]+)"`)
	var page string
	require.Eventually(t, func() bool {
		_, page = f.get(c, "/workflows/wf-gap")
		return rev.MatchString(page) && strings.Contains(page, `data-task="T1"`)
	}, 10*time.Second, 20*time.Millisecond)
	since := rev.FindStringSubmatch(page)[1]
	f.putTask("wf-gap", "T1", subjects.StateCompleted, subjects.StageDone) // before the stream opens
	require.Eventually(t, func() bool {
		_, p := f.get(c, "/workflows/wf-gap")
		return strings.Contains(p, `data-count="done">1<`)
	}, 10*time.Second, 20*time.Millisecond)

	ctx, cancel := context.WithTimeout(t.Context(), 10*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, f.srv.URL+"/events?wf=wf-gap&since="+since, nil)
	require.NoError(t, err)
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
	require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
	buf := make([]byte, 0, 4096)
	for !strings.Contains(string(buf), `"col":"done"`) {
		chunk := make([]byte, 1024)
		n, err := resp.Body.Read(chunk)
		require.NoError(t, err, "stream so far: %s", buf)
		buf = append(buf, chunk[:n]...)
	}
	assert.Contains(t, string(buf), `"t":"T1"`)
}

// wrongToken is token with its first character changed: never token itself,
// whatever character it starts with.
func wrongToken(token string) string {
	first := byte('x')
	if token[0] == first {
		first = 'y'
	}
	return string(first) + token[1:]
}
