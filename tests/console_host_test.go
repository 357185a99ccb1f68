package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/console"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/workflow"
	"github.com/droverhq/drover/subjects"
)

// hostRouteSamples fill a console route's wildcards; another gets "x".
var hostRouteSamples = map[string]string{"wf": "wf-rebind", "task": "T1", "action": "pause", "seq": "1", "decision": "approve"}

var routeWildcard = regexp.MustCompile(`\{([a-z]+)(\.\.\.)?\}`)

// consoleRoute is a method and a path that reach a console route's pattern.
func consoleRoute(pattern string) (method, path string) {
	method, path, _ = strings.Cut(pattern, " ")
	subtree := strings.HasSuffix(path, "/") && !strings.HasSuffix(path, "{$}")
	path = strings.ReplaceAll(path, "{$}", "")
	path = routeWildcard.ReplaceAllStringFunc(path, func(w string) string {
		if v, ok := hostRouteSamples[routeWildcard.FindStringSubmatch(w)[1]]; ok {
			return v
		}
		return "x"
	})
	if subtree {
		path += "app.js"
	}
	return method, path
}

// DNS rebinding and cross-site forms against a console on loopback with
// auth off, in headless Chromium. The browser resolves evil.test and
// attacker.test to 127.0.0.1 (--host-resolver-rules), as an attacker's
// rebound DNS name would. A page loaded as http://evil.test:<port>/ is
// refused on every route the console registers, so it reads no page and
// no token and pauses nothing; another origin's form that posts to the
// console (even with a real session's token) is refused; the console at
// 127.0.0.1:<port> still shows its pages, its live stream and takes its
// actions.
func TestConsoleBrowserRefusesRebinding(t *testing.T) {
	path := chromium(t)
	_, nc, js, res := natstest.Provisioned(t)
	names := subjects.MustNames(subjects.DefaultPrefix)
	ctl, err := workflow.NewController(workflow.Deps{NC: nc, JS: js, Names: names, State: res.State, Audit: res.Audit, Log: natstest.Quiet()})
	require.NoError(t, err)
	stop, err := ctl.Start(t.Context())
	require.NoError(t, err)
	t.Cleanup(stop)
	cs, err := console.New(console.Deps{NC: nc, JS: js, Names: names, Log: natstest.Quiet()}, console.Config{ControlTimeout: 10 * time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = cs.Run(ctx) }()
	t.Cleanup(func() { cancel(); natstest.Recv(t, done, 30*time.Second) })
	select {
	case <-cs.Ready():
	case <-time.After(browserWait):
		t.Fatal("the console did not load the state bucket")
	}
	srv := httptest.NewServer(cs.Handler())
	t.Cleanup(srv.Close)
	_, port, err := net.SplitHostPort(srv.Listener.Addr().String())
	require.NoError(t, err)
	legit := "http://127.0.0.1:" + port
	evil := "http://evil.test:" + port

	st, _ := json.Marshal(subjects.TaskState{Workflow: "wf-rebind", Task: "T1", State: subjects.StateRunning, Stage: "planner",
		Worker: "w1", StartedAt: time.Now(), UpdatedAt: time.Now()})
	_, err = res.State.Put(t.Context(), subjects.StateKey("wf-rebind", "T1"), st)
	require.NoError(t, err)
	wfState := func() string {
		s, err := workflow.GetStatus(t.Context(), res.State, "wf-rebind")
		require.NoError(t, err)
		return s.State.State
	}

	// The attacker's own site: a form that posts to the console at once.
	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		fmt.Fprintf(w, `<!doctype html><form method="post" action="%s/workflows/wf-rebind/pause">`+
			`<input type="hidden" name="csrf" value="%s"><input type="hidden" name="reason" value="pwned"></form>`+
			`<script>document.forms[0].submit()</script>`, html.EscapeString(legit), html.EscapeString(r.URL.Query().Get("csrf")))
	}))
	t.Cleanup(attacker.Close)
	_, aport, err := net.SplitHostPort(attacker.Listener.Addr().String())
	require.NoError(t, err)

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.Headless,
		chromedp.Flag("host-resolver-rules", "MAP evil.test 127.0.0.1, MAP attacker.test 127.0.0.1"),
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() { bcancel(); acancel() })
	// The first action starts the browser, bound to the context it is
	// given: bctx, not a bounded child.
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate("about:blank")))
	run := func(actions ...chromedp.Action[chromedp.Void]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, browserWait)
		defer cancel()
		require.NoError(t, chromedp.Do(ctx, actions...))
	}
	eval := func(expr string, opts ...chromedp.EvaluateOption) string {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, browserWait)
		defer cancel()
		v, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr, opts...))
		require.NoError(t, err, expr)
		return v
	}
	poll := func(expr string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(bctx, browserWait)
		defer cancel()
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(browserWait)))
		if err != nil {
			t.Fatalf("waiting for %s: %v", expr, err)
		}
	}

	// The console, as its operator opens it: its board, its live stream,
	// and a session's token.
	require.Eventually(t, func() bool {
		resp, err := http.Get(legit + "/workflows/wf-rebind")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, browserWait, 10*time.Millisecond)
	run(chromedp.Navigate(legit+"/workflows/wf-rebind"), chromedp.WaitVisible(chromedp.CSS("main h1")))
	poll(`document.getElementById("live").textContent === "live"`)
	token := eval(`document.querySelector('input[name="csrf"]').value`)
	require.NotEmpty(t, token)

	// The rebinding page: its own origin is evil.test, its address
	// 127.0.0.1. Every route, fetched from it as same-origin requests,
	// and the page itself answer 421. In a real attack the page's script
	// came from the attacker's server before the name was rebound; here
	// the page is the console's refusal, whose CSP ("default-src 'none'")
	// would block the script's fetches, so the browser bypasses CSP while
	// it plays the attacker.
	_, err = chromedp.Call(bctx, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: true})
	require.NoError(t, err)
	run(chromedp.Navigate(evil + "/workflows/wf-rebind"))
	body := eval(`document.body.innerText`)
	require.Contains(t, body, "421 misdirected request", "the rebinding page's own load")
	require.NotContains(t, body, "wf-rebind")
	var calls []string
	for _, pattern := range append(cs.Routes(), "GET /nope") {
		method, p := consoleRoute(pattern)
		calls = append(calls, fmt.Sprintf(`[%q, %q]`, method, p))
	}
	script := `(async () => {
		const out = [];
		for (const [method, path] of [` + strings.Join(calls, ",") + `]) {
			const init = {method, redirect: "manual", cache: "no-store"};
			if (method === "POST") init.body = new URLSearchParams({csrf: ` + fmt.Sprintf("%q", token) + `, comment: "ok", confirm: "yes"});
			const ctl = new AbortController();
			setTimeout(() => ctl.abort(), 10000);
			init.signal = ctl.signal;
			try {
				const r = await fetch(path, init);
				const text = (await r.text()).slice(0, 200);
				out.push(method + " " + path + " " + r.status + " " + JSON.stringify(text));
			} catch (e) {
				out.push(method + " " + path + " error " + e);
			}
		}
		return out.join("\n");
	})()`
	results := eval(script, chromedp.EvalAwaitPromise)
	lines := strings.Split(results, "\n")
	require.Len(t, lines, len(calls), results)
	for _, line := range lines {
		require.Contains(t, line, " 421 ", "a route the rebinding page reached: %s", line)
		require.NotContains(t, line, "csrf", line)
	}
	require.Equal(t, subjects.StateRunning, wfState(), "the rebinding page paused the workflow")
	_, err = chromedp.Call(bctx, page.SetBypassCSP, page.SetBypassCSPParams{Enabled: false})
	require.NoError(t, err)

	// Another site's form posting to the console with a real session's
	// token: the browser sends the attacker's Origin (and, SameSite=Strict,
	// no session cookie); the console answers 403.
	run(chromedp.Navigate("http://attacker.test:" + aport + "/?" + url.Values{"csrf": {token}}.Encode()))
	poll(`location.host === "127.0.0.1:` + port + `" && document.readyState === "complete"`)
	require.Contains(t, eval(`document.body.innerText`), "403 Forbidden")
	require.Equal(t, subjects.StateRunning, wfState(), "the cross-site form paused the workflow")

	// The console itself still acts: its own Pause button; the same post
	// without the session's token is refused.
	run(chromedp.Navigate(legit+"/workflows/wf-rebind"), chromedp.WaitVisible(chromedp.CSS(`button[data-action="pause"]`)))
	require.Equal(t, "403", eval(`fetch("/workflows/wf-rebind/pause", {method: "POST", redirect: "manual",
		body: new URLSearchParams({reason: "no token"})}).then(r => String(r.status))`, chromedp.EvalAwaitPromise))
	require.Equal(t, subjects.StateRunning, wfState(), "a post without the token paused the workflow")
	run(chromedp.Click(chromedp.CSS(`button[data-action="pause"]`)))
	require.Eventually(t, func() bool { return wfState() == subjects.StatePaused }, browserWait, 20*time.Millisecond,
		"the console's own Pause button")
}
