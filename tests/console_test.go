package tests

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/console"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// browserWait bounds one wait for the page in the browser tests.
const browserWait = 30 * time.Second

// chromium finds the system browser. Without one the test is skipped, and
// fails when CI is set (.ci/run installs it).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	msg := "no chromium on PATH (apt-get install chromium)"
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set, so this test may not be skipped)", msg)
	}
	t.Skip(msg)
	return ""
}

// consoleUI is a console served next to a worker, and a headless browser.
type consoleUI struct {
	t       *testing.T
	b       *bundle
	url     string
	ctx     context.Context // the browser tab's
	dialogs atomic.Int32
}

func newConsoleUI(t *testing.T, b *bundle) *consoleUI {
	t.Helper()
	path := chromium(t)
	cs, err := console.New(console.Deps{NC: b.nc, JS: b.js, Names: b.names, Log: natstest.Quiet()}, console.Config{})
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

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()), chromedp.WindowSize(1400, 900))
	actx, acancel := chromedp.NewExecAllocator(context.Background(), opts...)
	bctx, bcancel := chromedp.NewContext(actx)
	t.Cleanup(func() { bcancel(); acancel() })
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate("about:blank")))
	ui := &consoleUI{t: t, b: b, url: srv.URL, ctx: bctx}
	// An alert would block the page: count it and close it.
	dialogs := chromedp.Events(bctx, page.JavascriptDialogOpening)
	go func() {
		for _, err := range dialogs {
			if err != nil {
				return
			}
			ui.dialogs.Add(1)
			_, _ = chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	return ui
}

// do runs actions with a bound.
func (u *consoleUI) do(actions ...chromedp.Action[chromedp.Void]) {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(u.ctx, browserWait)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		u.t.Fatalf("%v on %s", err, u.where())
	}
}

// navigated tells whether err is a poll ended by the page's navigation.
func navigated(err error) bool {
	for _, s := range []string{"navigated or closed", "Cannot find context", "Execution context was destroyed"} {
		if strings.Contains(err.Error(), s) {
			return true
		}
	}
	return false
}

// where tells the page the browser shows, for a failure's message.
func (u *consoleUI) where() string {
	ctx, cancel := context.WithTimeout(u.ctx, 5*time.Second)
	defer cancel()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](`location.href + " " + document.readyState + " " + document.body.innerText.replace(/\s+/g, " ").slice(0, 600)`))
	if err != nil {
		return err.Error()
	}
	return s
}

// open navigates to a console path and waits for its heading.
func (u *consoleUI) open(path string) {
	u.t.Helper()
	u.do(chromedp.Navigate(u.url+path), chromedp.WaitVisible(chromedp.CSS("main h1")))
}

// openListed opens a console path once the console serves it: a task's
// state in the bucket reaches the console's mirror through its watch a
// moment later, and a board opened in between is the workflow's 404.
func (u *consoleUI) openListed(path string) {
	u.t.Helper()
	require.Eventually(u.t, func() bool {
		resp, err := http.Get(u.url + path)
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, browserWait, 10*time.Millisecond, "the console serves %s", path)
	u.open(path)
}

// poll waits until a JavaScript expression is truthy.
func (u *consoleUI) poll(expr string) {
	u.t.Helper()
	deadline := time.Now().Add(2 * browserWait)
	for {
		ctx, cancel := context.WithDeadline(u.ctx, deadline)
		_, err := chromedp.Run(ctx, chromedp.Poll[chromedp.Void](expr, chromedp.WithPollingTimeout(time.Until(deadline))))
		cancel()
		if err == nil {
			return
		}
		// A page that navigates (a form's redirect, a live reload) ends the
		// poll; poll the new page.
		if !navigated(err) || time.Now().After(deadline) {
			u.t.Fatalf("waiting for %s: %v on %s", expr, err, u.where())
		}
	}
}

func evalJS[T any](u *consoleUI, expr string) T {
	u.t.Helper()
	ctx, cancel := context.WithTimeout(u.ctx, browserWait)
	defer cancel()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[T](expr))
	require.NoError(u.t, err, expr)
	return v
}

// shot writes a full-page screenshot to docs/console/<name>.png when
// DROVER_SCREENSHOTS=1; names ending in "-top" capture the window only.
func (u *consoleUI) shot(name string) {
	u.t.Helper()
	if os.Getenv("DROVER_SCREENSHOTS") != "1" {
		return
	}
	ctx, cancel := context.WithTimeout(u.ctx, browserWait)
	defer cancel()
	capture := chromedp.FullScreenshot(100)
	if strings.HasSuffix(name, "-top") {
		capture = chromedp.CaptureScreenshot()
	}
	png, err := chromedp.Run(ctx, capture)
	require.NoError(u.t, err)
	dir := filepath.Join("..", "docs", "console")
	require.NoError(u.t, os.MkdirAll(dir, 0o755))
	require.NoError(u.t, os.WriteFile(filepath.Join(dir, name+".png"), png, 0o644))
}

// The console in a real browser against a real worker: every view opens;
// cards move to done live; pause and resume from the buttons; a failed
// task's dead letter redriven from the console; hostile text stays text;
// and the figures of a 10,000-task board and of the audit view at 500
// events/s.
func TestConsoleBrowser(t *testing.T) {
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 16)
	ui := newConsoleUI(t, b)

	t.Run("board cards move to done live", func(t *testing.T) {
		ui.t = t
		slow := `{"latency_ms": {"planner": 300, "implementer": 600, "judge": 300}}`
		after := b.submit(withSim(task("wf-live", "T0"), slow))
		waitState(t, b, "wf-live", "T0")
		ui.openListed("/workflows/wf-live")
		ui.do(chromedp.Evaluate[chromedp.Void](`window.stayed = true`))
		var reqs []subjects.TaskRequest
		for i := 1; i < 8; i++ {
			reqs = append(reqs, withSim(task("wf-live", fmt.Sprintf("T%d", i)), slow))
		}
		b.submit(reqs...)
		ui.poll(`document.querySelectorAll('.col[data-col="implementing"] .card').length > 0`)
		ui.shot("board")
		ui.poll(`document.querySelectorAll('.col[data-col="done"] .card').length === 8 && document.querySelector('[data-count="done"]').textContent === "8"`)
		// The last task's end turns the workflow finished in place.
		ui.poll(`document.getElementById("wfstate").textContent === "finished"`)
		require.True(t, evalJS[bool](ui, `window.stayed === true`), "the page reloaded")
		b.waitTerminal("wf-live", after, 8)
		ui.shot("board-done")
	})

	t.Run("pause and resume from the buttons", func(t *testing.T) {
		ui.t = t
		var reqs []subjects.TaskRequest
		for i := range 4 {
			reqs = append(reqs, withSim(task("wf-pause-ui", fmt.Sprintf("T%d", i)), `{"latency_ms": {"implementer": 1500}}`))
		}
		after := b.submit(reqs...)
		for i := range 4 {
			waitState(t, b, "wf-pause-ui", fmt.Sprintf("T%d", i))
		}
		ui.openListed("/workflows/wf-pause-ui")
		ui.do(chromedp.Click(chromedp.CSS(`button[data-action="pause"]`)))
		ui.poll(`document.getElementById("wfstate") && document.getElementById("wfstate").textContent === "paused"`)
		b.waitParked("wf-pause-ui", 4) // the worker obeys: every task parks
		st := b.status("wf-pause-ui")
		require.Equal(t, subjects.StatePaused, st.State.State)
		require.Zero(t, st.Counts[subjects.StateCompleted], "a task completed while paused")
		ui.open("/workflows/wf-pause-ui")
		ui.shot("board-paused")
		ui.do(chromedp.Click(chromedp.CSS(`button[data-action="resume"]`)))
		// Its tasks may all end at once: then it shows as finished.
		ui.poll(`document.getElementById("wfstate") && document.getElementById("wfstate").dataset.state === "running"`)
		got := b.waitTerminal("wf-pause-ui", after, 4)
		for id, ev := range got {
			require.Equal(t, subjects.EventTaskCompleted, ev.EventType, id)
		}
		ui.poll(`document.querySelectorAll('.col[data-col="done"] .card').length === 4`)
		// The audit stream names the console user.
		var actors []string
		for _, ev := range b.events("wf-pause-ui") {
			if ev.EventType == subjects.EventWorkflowPaused || ev.EventType == subjects.EventWorkflowResumed {
				var md map[string]any
				require.NoError(t, json.Unmarshal(ev.Metadata, &md))
				actors = append(actors, fmt.Sprint(md["actor"]))
			}
		}
		require.Equal(t, []string{"console:anonymous", "console:anonymous"}, actors)
	})

	t.Run("a failed task's dead letter is redriven", func(t *testing.T) {
		ui.t = t
		fail := withSim(task("wf-fail", "F1"), `{"judge_rejects": 1}`)
		fail.MaxAttempts = 1
		after := b.submit(fail)
		require.Equal(t, subjects.EventTaskFailed, b.waitTerminal("wf-fail", after, 1)["F1"].EventType)
		ui.open("/tasks/wf-fail/F1")
		ui.poll(`document.querySelector(".dlqbox") && document.querySelector(".dlqbox").textContent.includes("max_attempts")`)
		ui.shot("task-failed")
		ui.do(chromedp.Click(chromedp.CSS(`.dlqbox a`)), chromedp.WaitVisible(chromedp.CSS(`button[data-action="redrive"]`)))
		ui.shot("dlq-entry")
		ui.do(chromedp.Click(chromedp.CSS(`button[data-action="redrive"]`)), chromedp.WaitVisible(chromedp.ID("confirm")))
		ui.do(chromedp.Click(chromedp.ID("confirm")), chromedp.WaitVisible(chromedp.ID("redriven")))
		text := evalJS[string](ui, `document.getElementById("redriven").textContent`)
		require.Contains(t, text, "wf-fail-redrive-1")
		waitState(t, b, "wf-fail-redrive-1", "F1") // a worker picked the redriven request up
		// The audit stream records the decision on the failed task, by the
		// console user, and the task's timeline shows it.
		var redrives []subjects.AuditEvent
		for _, ev := range b.events("wf-fail") {
			if ev.EventType == subjects.EventTaskRedriven {
				redrives = append(redrives, ev)
			}
		}
		require.Len(t, redrives, 1)
		require.Equal(t, []any{"F1", subjects.ActorHuman}, []any{redrives[0].TaskID, redrives[0].Actor})
		var md map[string]any
		require.NoError(t, json.Unmarshal(redrives[0].Metadata, &md))
		require.Equal(t, "console:anonymous", md["actor"])
		require.Equal(t, "wf-fail-redrive-1", md["new_workflow"])
		ui.open("/tasks/wf-fail/F1")
		ui.poll(`document.querySelector(".t-task_redriven .redrive .by") && document.querySelector(".t-task_redriven .redrive .by").textContent === "console:anonymous"`)
		require.Contains(t, evalJS[string](ui, `document.querySelector(".t-task_redriven .redrive").textContent`), "wf-fail-redrive-1")
		ui.open("/dlq")
		ui.shot("dlq")
	})

	t.Run("hostile text renders as text", func(t *testing.T) {
		ui.t = t
		scope := `<script>window.pwned=1;alert(1)</script><img src=x onerror="window.pwned=2;alert(2)">`
		r := task("wf-xss", "X1")
		r.Scope = scope
		r.Verification = `"><svg onload=alert(3)>`
		after := b.submit(r)
		b.waitTerminal("wf-xss", after, 1)
		for _, path := range []string{"/tasks/wf-xss/X1", "/workflows/wf-xss", "/audit?workflow=wf-xss"} {
			ui.open(path)
		}
		ui.open("/tasks/wf-xss/X1")
		require.Equal(t, scope, evalJS[string](ui, `document.getElementById("scope").textContent`))
		require.Zero(t, evalJS[int](ui, `document.querySelectorAll("main script, main img, main svg:not(.spark)").length`))
		require.True(t, evalJS[bool](ui, `typeof window.pwned === "undefined"`))
		require.Zero(t, ui.dialogs.Load(), "a dialog opened")
		ui.shot("task-xss")
	})

	t.Run("a task's diff is highlighted", func(t *testing.T) {
		ui.t = t
		patch := "diff --git a/api/health.go b/api/health.go\n--- a/api/health.go\n+++ b/api/health.go\n@@ -10,6 +10,9 @@ func Routes(mux *http.ServeMux) {\n \tmux.HandleFunc(\"GET /version\", version)\n-\tmux.HandleFunc(\"GET /health\", nil)\n+\tmux.HandleFunc(\"GET /livez\", func(w http.ResponseWriter, _ *http.Request) {\n+\t\tw.Write([]byte(\"ok <b>\"))\n+\t})\n }\n"
		publishEvent(t, b, "wf-diff", "D1", subjects.EventTaskAccepted, nil)
		publishEvent(t, b, "wf-diff", "D1", subjects.EventImplementerChange, map[string]any{"patch": patch, "summary": "add /livez"})
		ui.open("/tasks/wf-diff/D1")
		ui.poll(`document.querySelectorAll("pre.diff .d-add").length === 3 && document.querySelectorAll("pre.diff .d-del").length === 1`)
		require.Contains(t, evalJS[string](ui, `document.querySelector("pre.diff").textContent`), `w.Write([]byte("ok <b>"))`)
		ui.shot("task-diff")
	})

	t.Run("every view opens", func(t *testing.T) {
		ui.t = t
		for _, v := range []struct{ path, name, h1 string }{
			{"/", "fleet", "Fleet"},
			{"/workflows", "workflows", "Workflows"},
			{"/workflows/wf-live", "", "wf-live"},
			{"/tasks/wf-live/T1", "task", "wf-live / T1"},
			{"/audit", "audit-top", "Audit"},
			{"/audit?workflow=wf-fail&type=task_failed", "", "Audit"},
			{"/dlq", "", "Dead letters"},
			{"/reviews", "reviews", "Reviews"},
		} {
			ui.open(v.path)
			h1 := evalJS[string](ui, `document.querySelector("main h1").textContent`)
			require.Contains(t, h1, v.h1, v.path)
			if v.path == "/" {
				ui.poll(`document.querySelectorAll("tr[data-worker]").length === 1`)
			}
			if v.name != "" {
				ui.shot(v.name)
			}
		}
		ui.open("/workflows")
		ui.do(chromedp.Click(chromedp.CSS(`tr[data-wf="wf-live"] button[data-action="cancel"]`)), chromedp.WaitVisible(chromedp.ID("confirm")))
		ui.shot("confirm-cancel")
	})

	t.Run("audit view at 500 events per second", func(t *testing.T) {
		ui.t = t
		ui.open("/audit?workflow=wf-rate")
		ui.poll(`document.getElementById("live").textContent === "live"`)
		const rate, seconds = 500, 6
		start := time.Now()
		publishAt(t, b, "wf-rate", rate, seconds)
		ui.poll(fmt.Sprintf(`window.droverConsole.shown >= %d`, rate*seconds))
		lag := time.Since(start) - seconds*time.Second
		shown := evalJS[int](ui, `window.droverConsole.shown`)
		rows := evalJS[int](ui, `document.querySelectorAll("#rows tr").length`)
		heap := evalJS[float64](ui, `performance.memory ? performance.memory.usedJSHeapSize : 0`)
		t.Logf("audit view at %d events/s for %ds: %d events published, %d shown, %d rows in the DOM (cap 500), JS heap %.1f MiB, last event shown %s after the last publish",
			rate, seconds, rate*seconds, shown, rows, heap/(1<<20), lag.Round(10*time.Millisecond))
		require.Equal(t, rate*seconds, shown)
		require.LessOrEqual(t, rows, 500)
		ui.shot("audit-live-top")
	})

	t.Run("a 10,000-task workflow's first screen", func(t *testing.T) {
		ui.t = t
		const n = 10_000
		putTasks(t, b, "wf-big", n)
		require.Eventually(t, func() bool {
			resp, err := http.Get(ui.url + "/workflows/wf-big")
			if err != nil {
				return false
			}
			body, _ := io.ReadAll(resp.Body)
			_ = resp.Body.Close()
			return strings.Contains(string(body), fmt.Sprintf(`<span id="total">%d</span>`, n))
		}, browserWait, 50*time.Millisecond)
		var server []time.Duration
		for range 5 {
			start := time.Now()
			resp, err := http.Get(ui.url + "/workflows/wf-big")
			require.NoError(t, err)
			_, _ = io.Copy(io.Discard, resp.Body)
			_ = resp.Body.Close()
			server = append(server, time.Since(start))
		}
		sort.Slice(server, func(i, j int) bool { return server[i] < server[j] })
		ui.open("/workflows/wf-big")
		nav := evalJS[map[string]float64](ui, `(() => { const e = performance.getEntriesByType("navigation")[0];
			return {ttfb: e.responseStart, dcl: e.domContentLoadedEventEnd, load: e.loadEventEnd}; })()`)
		cards := evalJS[int](ui, `document.querySelectorAll(".card").length`)
		t.Logf("10,000-task workflow: server renders the board in %s (median of 5), browser: first byte %.0fms, DOMContentLoaded %.0fms, load %.0fms; %d cards on the first page",
			server[2].Round(100*time.Microsecond), nav["ttfb"], nav["dcl"], nav["load"], cards)
		require.LessOrEqual(t, cards, 7*200)
		ui.shot("board-10k")
	})
}

// waitState waits until a task has state (a worker picked it up).
func waitState(t *testing.T, b *bundle, wf, task string) {
	t.Helper()
	kv, err := b.js.KeyValue(context.Background(), b.names.StateBucket())
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		_, err := kv.Get(context.Background(), subjects.StateKey(wf, task))
		return err == nil
	}, browserWait, 10*time.Millisecond, "%s/%s has state", wf, task)
}

// publishEvent writes one audit event as a worker would.
func publishEvent(t *testing.T, b *bundle, wf, task string, et subjects.EventType, output map[string]any) {
	t.Helper()
	out, _ := json.Marshal(output)
	actor := subjects.ActorSystem
	if et == subjects.EventImplementerChange {
		actor = subjects.ActorOf(subjects.RoleImplementer)
	}
	ev := &subjects.AuditEvent{EventID: subjects.EventID(wf, task, 1, actor, et, 0), EventType: et, WorkflowID: wf, TaskID: task,
		Actor: actor, Attempt: 1, Timestamp: time.Now().UTC(), Action: string(et), Status: subjects.StatusSuccess, Output: out,
		Input: json.RawMessage(`{"workflow":"` + wf + `","id":"` + task + `","scope":"Add a /livez endpoint","verification":"GET /livez is 200"}`)}
	_, err := audit.NewPublisher(b.js, b.names).PublishEvent(context.Background(), ev, "", false, 0)
	require.NoError(t, err)
}

// publishAt publishes rate audit events a second for seconds, paced by a
// ticker (10 batches a second).
func publishAt(t *testing.T, b *bundle, wf string, rate, seconds int) {
	t.Helper()
	pub := audit.NewPublisher(b.js, b.names)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	i := 0
	for range seconds * 10 {
		<-tick.C
		for range rate / 10 {
			task := fmt.Sprintf("R%d", i)
			ev := &subjects.AuditEvent{EventID: subjects.EventID(wf, task, 1, subjects.ActorSystem, subjects.EventTaskAccepted, 0),
				EventType: subjects.EventTaskAccepted, WorkflowID: wf, TaskID: task, Actor: subjects.ActorSystem, Attempt: 1,
				Timestamp: time.Now().UTC(), Action: "accepted", Status: subjects.StatusSuccess}
			oe, err := subjects.EncodeEvent(ev)
			require.NoError(t, err)
			_, err = b.js.PublishMsgAsync(pub.Msg(oe, ""))
			require.NoError(t, err)
			i++
		}
	}
	select {
	case <-b.js.PublishAsyncComplete():
	case <-time.After(browserWait):
		t.Fatal("audit publishes not acknowledged")
	}
}

// putTasks writes n task states of a workflow straight to the bucket, in
// every column.
func putTasks(t *testing.T, b *bundle, wf string, n int) {
	t.Helper()
	states := []struct{ state, stage string }{
		{subjects.StateCompleted, subjects.StageDone}, {subjects.StateCompleted, subjects.StageDone}, {subjects.StateCompleted, subjects.StageDone},
		{subjects.StateRunning, "planner"}, {subjects.StateRunning, "implementer"}, {subjects.StateRunning, "judge"}, {subjects.StateFailed, subjects.StageDone},
	}
	now := time.Now().UTC()
	for i := range n {
		if i%1000 == 999 {
			select {
			case <-b.js.PublishAsyncComplete():
			case <-time.After(browserWait):
				t.Fatal("state puts not acknowledged")
			}
		}
		s := states[i%len(states)]
		body, _ := json.Marshal(subjects.TaskState{Workflow: wf, Task: fmt.Sprintf("T%05d", i), State: s.state, Stage: s.stage, Attempt: 1,
			Worker: "w1", StartedAt: now.Add(-time.Minute), UpdatedAt: now})
		_, err := b.js.PublishAsync("$KV."+b.names.StateBucket()+"."+subjects.StateKey(wf, fmt.Sprintf("T%05d", i)), body)
		require.NoError(t, err)
	}
	select {
	case <-b.js.PublishAsyncComplete():
	case <-time.After(browserWait):
		t.Fatal("state puts not acknowledged")
	}
}

// drover serve --console serves the console under /console/ on the
// worker's --http listener; an open event stream does not hold up its
// shutdown.
func TestServeConsole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	p := b.startProc("--console", "--http", "127.0.0.1:0")
	var addr string
	require.Eventually(t, func() bool {
		p.mu.Lock()
		defer p.mu.Unlock()
		for _, m := range p.logs {
			if m["msg"] == "http endpoints" {
				addr, _ = m["addr"].(string)
			}
		}
		return addr != ""
	}, browserWait, 10*time.Millisecond)
	base := "http://" + addr
	var body string
	var csp string
	require.Eventually(t, func() bool {
		resp, err := http.Get(base + "/console/")
		if err != nil {
			return false
		}
		defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
		bb, _ := io.ReadAll(resp.Body)
		body, csp = string(bb), resp.Header.Get("Content-Security-Policy")
		return resp.StatusCode == http.StatusOK
	}, browserWait, 20*time.Millisecond)
	require.Contains(t, body, `<h1>Fleet</h1>`)
	require.Contains(t, body, `src="/console/static/app.js"`)
	require.Contains(t, csp, "script-src 'self'")
	resp, err := http.Get(base + "/livez")
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)

	stream, err := http.Get(base + "/console/events")
	require.NoError(t, err)
	defer func() { _ = stream.Body.Close() }() // read, or abandoned: nothing to lose
	require.Equal(t, "text/event-stream", stream.Header.Get("Content-Type"))
	p.signal(syscall.SIGTERM)
	require.NoError(t, p.wait(20*time.Second))
}
