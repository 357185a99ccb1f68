package console_test

import (
	"context"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/console"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// newCreateFixture is a console that waits little for an admission: no
// worker runs here.
func newCreateFixture(t *testing.T) (*fixture, *http.Client, string) {
	t.Helper()
	f := newFixtureWith(t, func(c *console.Config) { c.AdmissionWait = 300 * time.Millisecond })
	c := f.browser()
	_, page := f.get(c, "/new")
	m := csrfField.FindStringSubmatch(page)
	require.NotNil(t, m, "the New task page has the CSRF token")
	return f, c, m[1]
}

// requests returns the task requests the tasks stream holds.
func (f *fixture) requests() []subjects.TaskRequest {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s, err := f.js.Stream(ctx, names.TasksStream())
	require.NoError(f.t, err)
	info, err := s.Info(ctx)
	require.NoError(f.t, err)
	var out []subjects.TaskRequest
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		require.NoError(f.t, err)
		var req subjects.TaskRequest
		require.NoError(f.t, json.Unmarshal(m.Data, &req))
		out = append(out, req)
	}
	return out
}

func readBody(t *testing.T, resp *http.Response) string {
	t.Helper()
	defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return string(b)
}

// A create needs the session's CSRF token and this origin like every
// action; a valid one publishes exactly one request, the fields as given.
func TestCreateTask(t *testing.T) {
	f, c, token := newCreateFixture(t)
	origin := f.srv.URL
	form := url.Values{"workflow": {"wf-new"}, "id": {"T1"}, "scope": {"Add /livez\r\nIt answers 200."},
		"verification": {"GET /livez is 200"}, "type": {"feature"}, "branch": {"feat/livez"}, "review": {subjects.ReviewAfterJudge}}
	with := func(kv ...string) url.Values {
		v := url.Values{}
		for k, vs := range form {
			v[k] = vs
		}
		for i := 0; i+1 < len(kv); i += 2 {
			v.Set(kv[i], kv[i+1])
		}
		return v
	}
	for _, tc := range []struct {
		name   string
		client *http.Client
		form   url.Values
		header []string
	}{
		{"no token", c, form, []string{"Origin", origin}},
		{"wrong token", c, with("csrf", strings.Repeat("A", len(token))), []string{"Origin", origin}},
		{"no session cookie", &http.Client{}, with("csrf", token), []string{"Origin", origin}},
		{"no Origin and no Referer", c, with("csrf", token), nil},
		{"another origin", c, with("csrf", token), []string{"Origin", "http://evil.example"}},
	} {
		resp := f.post(tc.client, "/new/task", tc.form, tc.header...)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusForbidden, resp.StatusCode, tc.name)
	}
	require.Empty(t, f.requests(), "a refused create published a request")

	resp := f.post(c, "/new/task", with("csrf", token), "Origin", origin)
	body := readBody(t, resp)
	require.Equal(t, http.StatusOK, resp.StatusCode, body)
	require.Contains(t, body, `id="waiting"`, "no worker here: the page says the task is queued")
	reqs := f.requests()
	require.Len(t, reqs, 1)
	require.Equal(t, subjects.TaskRequest{ID: "T1", Workflow: "wf-new", Scope: "Add /livez\nIt answers 200.", Verification: "GET /livez is 200",
		Type: "feature", MaxAttempts: subjects.DefaultMaxAttempts, Branch: "feat/livez", Review: subjects.ReviewAfterJudge}, reqs[0])

	// Without an ID, one is generated.
	resp = f.post(c, "/new/task", with("csrf", token, "id", ""), "Origin", origin)
	require.Equal(t, http.StatusOK, resp.StatusCode, readBody(t, resp))
	reqs = f.requests()
	require.Len(t, reqs, 2)
	require.Regexp(t, `^T-[a-z2-7]{10}$`, reqs[1].ID)
	require.Equal(t, "wf-new", reqs[1].Workflow)
}

// Invalid fields are refused with the decoder's message on the form, the
// values kept and escaped; nothing is published.
func TestCreateTaskInvalid(t *testing.T) {
	f, c, token := newCreateFixture(t)
	base := url.Values{"csrf": {token}, "workflow": {"wf-bad"}, "id": {"T1"}, "scope": {"do it"}}
	for name, tc := range map[string]struct {
		field, value, want string
	}{
		"workflow with a space": {"workflow", "wf bad", "workflow"},
		"empty workflow":        {"workflow", "", "workflow"},
		"reserved task ID":      {"id", "_", "id"},
		"empty scope":           {"scope", "  ", "scope"},
		"bad branch":            {"branch", "feat..x", "branch"},
		"unknown review":        {"review", "<b>maybe</b>", "review"},
		"bad type":              {"type", "two words", "type"},
		"bad queue":             {"queue", "Q!", "queue"},
	} {
		form := url.Values{}
		for k, v := range base {
			form[k] = v
		}
		form.Set(tc.field, tc.value)
		resp := f.post(c, "/new/task", form, "Origin", f.srv.URL)
		body := readBody(t, resp)
		require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, name)
		i := strings.Index(body, `id="taskerr">`)
		require.GreaterOrEqual(t, i, 0, "%s: the page shows the error: %s", name, body)
		msg := html.UnescapeString(body[i+len(`id="taskerr">`) : i+strings.Index(body[i:], "</p>")])
		assert.Contains(t, msg, tc.want, name)
		assert.NotContains(t, body, "<b>maybe</b>", "%s: a value is escaped", name)
	}
	require.Empty(t, f.requests())
}

// A worker's refusal at admission is shown on the form, escaped.
func TestCreateTaskRefusedByAdmission(t *testing.T) {
	f, c, token := newCreateFixture(t)
	// A stand-in for the worker's admission: it refuses the request as
	// soon as it is stored.
	ctx := t.Context()
	sub, err := f.nc.Subscribe(names.TaskSubject(subjects.DefaultQueue), func(msg *nats.Msg) {
		var req subjects.TaskRequest
		_ = json.Unmarshal(msg.Data, &req)
		ev := subjects.AuditEvent{EventID: "rej-1", EventType: subjects.EventTaskRejected, WorkflowID: req.Workflow, TaskID: req.ID,
			Actor: subjects.ActorSystem, Timestamp: time.Now(), Action: "too_large", Status: subjects.StatusFailure,
			Error: `scope is <img src=x onerror=alert(1)> too long`}
		ev.Normalize()
		b, _ := json.Marshal(ev)
		_, _ = f.js.Publish(ctx, names.AuditSubject(req.Workflow, req.ID, ev.Actor, ev.EventType), b)
	})
	require.NoError(t, err)
	defer func() { _ = sub.Unsubscribe() }()
	require.NoError(t, f.nc.Flush())
	resp := f.post(c, "/new/task", url.Values{"csrf": {token}, "workflow": {"wf-rej"}, "id": {"T1"}, "scope": {"x"}}, "Origin", f.srv.URL)
	body := readBody(t, resp)
	require.Equal(t, http.StatusUnprocessableEntity, resp.StatusCode, body)
	require.Contains(t, body, "Refused by the worker&#39;s admission (too_large): scope is &lt;img src=x onerror=alert(1)&gt; too long")
	require.NotContains(t, body, "<img src=x")
}

const goodBoard = `# Sprint

| ID | Scope | Status | Verification |
|----|-------|--------|--------------|
| B1 | Add a health endpoint | [ ] | GET /livez is 200 |
| B2 | Already done | [x] | |
| B3 | Log requests | [ ] | |
`

// A pasted board is parsed as drover board submit parses a file: its open
// rows become one request each; a board with a problem is refused whole.
func TestSubmitBoard(t *testing.T) {
	f, c, token := newCreateFixture(t)
	post := func(form url.Values, header ...string) (int, string) {
		resp := f.post(c, "/new/board", form, header...)
		return resp.StatusCode, readBody(t, resp)
	}
	form := url.Values{"csrf": {token}, "workflow": {"sprint-1"}, "board": {goodBoard}}
	code, _ := post(url.Values{"workflow": {"sprint-1"}, "board": {goodBoard}}, "Origin", f.srv.URL)
	require.Equal(t, http.StatusForbidden, code, "no token")
	code, _ = post(form)
	require.Equal(t, http.StatusForbidden, code, "no Origin")

	bad := strings.Replace(goodBoard, "| B3 | Log requests | [ ] | |", "| B1 | <i>again</i> | [?] | |", 1)
	code, body := post(url.Values{"csrf": {token}, "workflow": {"sprint-1"}, "board": {bad}}, "Origin", f.srv.URL)
	require.Equal(t, http.StatusUnprocessableEntity, code)
	require.Contains(t, body, `id="boarderr"`)
	require.Contains(t, body, "nothing submitted")
	require.Contains(t, body, "line 7:")
	require.NotContains(t, body, "<i>again</i>")
	require.Empty(t, f.requests())

	code, body = post(form, "Origin", f.srv.URL)
	require.Equal(t, http.StatusOK, code, body)
	reqs := f.requests()
	require.Len(t, reqs, 2)
	require.Equal(t, []string{"B1", "B3"}, []string{reqs[0].ID, reqs[1].ID})
	require.Equal(t, "sprint-1", reqs[0].Workflow)
	require.Equal(t, "Add a health endpoint", reqs[0].Scope)
	require.Equal(t, "GET /livez is 200", reqs[0].Verification)
	require.JSONEq(t, `{"file": "sprint-1.md"}`, string(reqs[0].Metadata["board"]))
}

// publishEvent writes an audit event as a worker would.
func (f *fixture) publishEvent(wf, task string, et subjects.EventType, actor subjects.Actor, input, md string) {
	f.t.Helper()
	ev := subjects.AuditEvent{EventID: wf + "/" + task + "/" + string(et), EventType: et, WorkflowID: wf, TaskID: task, Actor: actor,
		Timestamp: time.Now(), Status: subjects.StatusSuccess, Input: json.RawMessage(input), Metadata: json.RawMessage(md)}
	ev.Normalize()
	b, err := json.Marshal(ev)
	require.NoError(f.t, err)
	_, err = f.js.Publish(context.Background(), names.AuditSubject(wf, task, actor, et), b)
	require.NoError(f.t, err)
}

// A card shows the scope's first line and the agent, escaped, whether the
// console read their events live or at its start.
func TestCardsShowTitleAndAgent(t *testing.T) {
	f := newFixture(t, console.Auth{})
	f.putTask("wf-cards", "T1", subjects.StateRunning, "judge")
	f.publishEvent("wf-cards", "T1", subjects.EventTaskAccepted, subjects.ActorSystem,
		`{"id": "T1", "workflow": "wf-cards", "scope": "<b>Fix</b> the race\nin the pool"}`, "")
	f.publishEvent("wf-cards", "T1", subjects.EventImplementerChange, subjects.Actor(subjects.RoleImplementer), "", `{"agent": "claude-code", "cost_usd": 0.01}`)
	want := []string{`class="title" title="&lt;b&gt;Fix&lt;/b&gt; the race">&lt;b&gt;Fix&lt;/b&gt; the race</span>`, `<span class="agent">claude-code</span>`}
	shows := func(url string) bool {
		resp, err := http.Get(url + "/workflows/wf-cards")
		if err != nil {
			return false
		}
		body := readBody(t, resp)
		return strings.Contains(body, want[0]) && strings.Contains(body, want[1])
	}
	require.Eventually(t, func() bool { return shows(f.srv.URL) }, 10*time.Second, 20*time.Millisecond, "read live")

	// A console started after the events reads them from the stream.
	later, err := console.New(console.Deps{NC: f.nc, JS: f.js, Names: names, Log: natstest.Quiet()}, console.Config{})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = later.Run(ctx) }()
	t.Cleanup(func() { cancel(); natstest.Recv(t, done, 30*time.Second) })
	srv := httptest.NewServer(later.Handler())
	t.Cleanup(srv.Close)
	require.Eventually(t, func() bool { return shows(srv.URL) }, 10*time.Second, 20*time.Millisecond, "read at start")
}
