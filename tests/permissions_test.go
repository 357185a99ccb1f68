package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/cli"
	"github.com/droverhq/drover/internal/console"
	"github.com/droverhq/drover/internal/dlq"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/subjects"
)

// permPasswords are the test passwords of deploy/nats/permissions.conf's users.
var permPasswords = map[string]string{"producer": "producer-test-pw", "worker": "worker-test-pw", "investigator": "investigator-test-pw",
	"console": "console-test-pw", "reviewer": "reviewer-test-pw"}

// auditGuard are the API subjects every profile is denied.
var auditGuard = []string{
	"$JS.API.STREAM.DELETE.DROVER_AUDIT", "$JS.API.STREAM.PURGE.DROVER_AUDIT",
	"$JS.API.STREAM.MSG.DELETE.DROVER_AUDIT", "$JS.API.STREAM.UPDATE.DROVER_AUDIT",
}

// TestPermissionProfiles runs a server with deploy/nats/permissions.conf: a
// worker process logged in as "worker" completes what "producer" submits,
// "investigator" replays the audit but cannot submit, and none of the three
// can delete, purge, delete a message of or update the audit stream.
func TestPermissionProfiles(t *testing.T) {
	t.Parallel()
	s := startPermServer(t)
	names := subjects.MustNames("drover")
	spawn(t, "serve", "--nats-url", s.url, "--user", "worker", "--password", permPasswords["worker"],
		"--http", "", "--log-format", "json", "--worker-id", "perm-worker", "--ack-wait", "2s").waitStarted(60 * time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	prod := s.connect(t, "producer")
	after, err := producer.AuditLastSeq(ctx, prod.js, names)
	require.NoError(t, err)
	slow := withSim(task("perm", "T3"), `{"latency_ms": {"implementer": 1500}}`) // in-progress heartbeats
	for _, r := range []subjects.TaskRequest{task("perm", "T1"), task("perm", "T2"), slow} {
		_, err := producer.Publish(ctx, prod.js, names, subjects.DefaultQueue, r)
		require.NoError(t, err)
	}
	done := map[string]subjects.EventType{}
	require.NoError(t, producer.FollowTerminal(ctx, prod.js, names, "perm", after, func(tm producer.Terminal) bool {
		done[tm.Event.TaskID] = tm.Event.EventType
		return len(done) < 3
	}))
	require.Equal(t, map[string]subjects.EventType{"T1": subjects.EventTaskCompleted, "T2": subjects.EventTaskCompleted, "T3": subjects.EventTaskCompleted}, done)

	// Client commands with --user and --password: submit and follow, then
	// control a workflow (the worker answers on drover.ctl).
	s.drover(t, "producer", "submit", "--workflow", "perm-cli", "--id", "C1", "--scope", "do C1", "--wait")
	s.drover(t, "producer", "workflow", "pause", "perm-cli")
	s.drover(t, "producer", "workflow", "resume", "perm-cli")

	// The investigator replays the audit, finds the worker, cannot submit.
	inv := s.connect(t, "investigator")
	var replayed []subjects.AuditEvent
	require.NoError(t, audit.Replay(ctx, inv.js, names, audit.Query{Workflow: "perm", Type: subjects.EventTaskCompleted}, func(r audit.Record) error {
		replayed = append(replayed, r.Event)
		return nil
	}))
	require.Len(t, replayed, 3)
	require.Contains(t, s.drover(t, "investigator", "audit", "--workflow", "perm-cli"), "task_completed")
	s.drover(t, "investigator", "audit", "verify")
	require.Contains(t, s.drover(t, "investigator", "task", "get", "perm/T1"), "completed")
	s.drover(t, "investigator", "task", "logs", "perm/T1") // an ordered consumer on DROVER_LIVE
	s.drover(t, "investigator", "workflow", "status", "perm")
	s.drover(t, "investigator", "dlq", "ls")
	s.drover(t, "investigator", "cache", "stats")
	var ping struct{ ID string }
	pong, err := inv.nc.Request("$SRV.PING.drover", nil, 10*time.Second)
	require.NoError(t, err, "nats micro ping as investigator")
	require.NoError(t, json.Unmarshal(pong.Data, &ping))
	st, err := inv.nc.Request("drover.status."+ping.ID, nil, 10*time.Second)
	require.NoError(t, err, "worker status endpoint as investigator")
	require.Contains(t, string(st.Data), "perm-worker")
	inv.refused(t, "drover.tasks.default", func(ctx context.Context) error {
		_, err := producer.Publish(ctx, inv.js, names, subjects.DefaultQueue, task("perm-inv", "X"))
		return err
	})

	before := auditIntact(t, inv.js, 0)
	for _, u := range []*permConn{prod, s.connect(t, "worker"), inv} {
		t.Run(u.user, func(t *testing.T) { u.refuseAuditDestruction(t) })
	}
	auditIntact(t, inv.js, before)
	want := []string{"investigator drover.tasks.default"}
	for _, user := range []string{"producer", "worker", "investigator"} {
		for _, subj := range auditGuard {
			want = append(want, user+" "+subj)
		}
	}
	require.ElementsMatch(t, want, s.log.violations(), "the server refused exactly the calls meant to be refused")
}

// TestPermissionWrongPasswordIsRefusedWithoutEcho checks that a refused
// login fails with a clear error that does not repeat the password.
func TestPermissionWrongPasswordIsRefusedWithoutEcho(t *testing.T) {
	t.Parallel()
	s := startPermServer(t)
	var stdout, stderr cliBuffer
	code := cli.Execute(context.Background(), []string{"--nats-url", s.url, "--user", "worker", "--password", "not-the-password",
		"--log-format", "text", "audit", "--workflow", "x"}, &stdout, &stderr)
	require.Equal(t, 1, code)
	require.Contains(t, strings.ToLower(stderr.String()), "authorization violation")
	require.Contains(t, stderr.String(), "user worker, password set")
	require.NotContains(t, stderr.String()+stdout.String(), "not-the-password")
}

// permServer is an in-process nats-server running permissions.conf with the
// test passwords, on a random port, storing in a temporary directory.
type permServer struct {
	url string
	log *violationLog
}

// extraUsers are more entries of the DROVER account's users list (test
// passwords in the entries themselves).
func startPermServer(t *testing.T, extraUsers ...string) *permServer {
	t.Helper()
	conf, err := os.ReadFile("../deploy/nats/permissions.conf")
	require.NoError(t, err)
	profiles, err := os.ReadFile("../deploy/nats/profiles.conf")
	require.NoError(t, err)
	dir := t.TempDir()
	// The passwords are defined where they are used: a variable of an
	// including file does not reach the included one.
	vars := "# test passwords\n"
	for user, pw := range permPasswords {
		vars += fmt.Sprintf("DROVER_%s_PASSWORD: %q\n", strings.ToUpper(user), pw)
	}
	for _, u := range extraUsers {
		profiles = bytes.Replace(profiles, []byte("permissions: $REVIEWER}"), []byte("permissions: $REVIEWER}\n      "+u), 1)
	}
	require.NoError(t, os.WriteFile(filepath.Join(dir, "profiles.conf"), append([]byte(vars), profiles...), 0o600))
	path := filepath.Join(dir, "server.conf")
	require.NoError(t, os.WriteFile(path, conf, 0o600))
	opts, err := server.ProcessConfigFile(path)
	require.NoError(t, err)
	opts.Host, opts.Port, opts.StoreDir, opts.NoSigs = "127.0.0.1", -1, filepath.Join(dir, "js"), true
	srv, err := server.NewServer(opts)
	require.NoError(t, err)
	log := &violationLog{}
	srv.SetLogger(log, false, false)
	go srv.Start()
	t.Cleanup(func() { srv.Shutdown(); srv.WaitForShutdown() })
	require.True(t, srv.ReadyForConnections(10*time.Second), "server not ready")
	return &permServer{url: srv.ClientURL(), log: log}
}

// drover runs a client command in-process as user and returns its stdout.
func (s *permServer) drover(t *testing.T, user string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var stdout, stderr cliBuffer
	all := append([]string{"--nats-url", s.url, "--user", user, "--password", permPasswords[user], "--log-format", "text", "--log-level", "warn"}, args...)
	code := cli.Execute(ctx, all, &stdout, &stderr)
	require.Equal(t, 0, code, "drover %v as %s: %s", args, user, stderr.String())
	return stdout.String()
}

// permConn is a connection as one user that collects the permission
// violations the server reports to it.
type permConn struct {
	user       string
	nc         *nats.Conn
	js         jetstream.JetStream
	violations chan error
}

func (s *permServer) connect(t *testing.T, user string) *permConn {
	t.Helper()
	return s.connectAs(t, user, permPasswords[user])
}

func (s *permServer) connectAs(t *testing.T, user, password string) *permConn {
	t.Helper()
	opts, err := broker.AuthOptions{User: user, Password: password}.Options()
	require.NoError(t, err)
	c := &permConn{user: user, violations: make(chan error, 64)}
	opts = append(opts, nats.ErrorHandler(func(_ *nats.Conn, _ *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			select {
			case c.violations <- err:
			default:
			}
		}
	}))
	c.nc, err = broker.Connect(context.Background(), s.url, "permissions test "+user, opts...)
	require.NoError(t, err)
	t.Cleanup(c.nc.Close)
	c.js, err = jetstream.New(c.nc)
	require.NoError(t, err)
	return c
}

// refused runs call and requires the server to refuse its publish to
// subject: it waits for the violation the server reports, then ends the
// call (a refused request gets no answer) and requires that it failed.
func (c *permConn) refused(t *testing.T, subject string, call func(context.Context) error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	errc := make(chan error, 1)
	go func() { errc <- call(ctx) }()
	want := fmt.Sprintf("%q", subject)
	for {
		select {
		case v := <-c.violations:
			if strings.Contains(v.Error(), want) {
				cancel()
				require.Error(t, natstest.Recv(t, errc, 30*time.Second), "%s as %s", subject, c.user)
				return
			}
		case err := <-errc:
			require.Error(t, err, "%s as %s: the call succeeded", subject, c.user)
			errc = nil // it failed: wait for the violation that says why
		case <-ctx.Done():
			t.Fatalf("%s as %s: no permissions violation reported", subject, c.user)
		}
	}
}

// refuseAuditDestruction tries the four calls of auditGuard as c's user.
func (c *permConn) refuseAuditDestruction(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := c.js.Stream(ctx, "DROVER_AUDIT")
	require.NoError(t, err, "stream info as %s", c.user)
	c.refused(t, auditGuard[0], func(ctx context.Context) error { return c.js.DeleteStream(ctx, "DROVER_AUDIT") })
	c.refused(t, auditGuard[1], func(ctx context.Context) error { return st.Purge(ctx) })
	c.refused(t, auditGuard[2], func(ctx context.Context) error { return st.DeleteMsg(ctx, 1) })
	cfg := st.CachedInfo().Config
	cfg.MaxAge, cfg.MaxMsgs = time.Minute, 1
	c.refused(t, auditGuard[3], func(ctx context.Context) error {
		_, err := c.js.UpdateStream(ctx, cfg)
		return err
	})
}

// auditIntact requires the audit stream to hold every event it ever stored
// (no gap, nothing deleted), at least atLeast of them, with its append-only
// settings; it returns the number of events.
func auditIntact(t *testing.T, js jetstream.JetStream, atLeast uint64) uint64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	st, err := js.Stream(ctx, "DROVER_AUDIT")
	require.NoError(t, err)
	info, err := st.Info(ctx)
	require.NoError(t, err)
	require.EqualValues(t, 1, info.State.FirstSeq)
	require.Equal(t, info.State.LastSeq, info.State.Msgs)
	require.Zero(t, info.State.NumDeleted)
	require.GreaterOrEqual(t, info.State.Msgs, atLeast)
	require.True(t, info.Config.DenyDelete && info.Config.DenyPurge)
	require.Zero(t, info.Config.MaxAge)
	require.EqualValues(t, -1, info.Config.MaxMsgs)
	return info.State.Msgs
}

// violationLog is the server's logger; it keeps the permission violations.
type violationLog struct {
	mu    sync.Mutex
	lines []string
}

func (l *violationLog) Errorf(format string, v ...any) {
	if line := fmt.Sprintf(format, v...); strings.Contains(line, "Violation") {
		l.mu.Lock()
		l.lines = append(l.lines, line)
		l.mu.Unlock()
	}
}
func (l *violationLog) Noticef(string, ...any) {}
func (l *violationLog) Warnf(string, ...any)   {}
func (l *violationLog) Fatalf(string, ...any)  {}
func (l *violationLog) Debugf(string, ...any)  {}
func (l *violationLog) Tracef(string, ...any)  {}

// violations returns "<user> <subject>" of each publish the server refused.
func (l *violationLog) violations() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []string
	for _, line := range l.lines {
		if m := violationRe.FindStringSubmatch(line); m != nil {
			line = m[1] + " " + m[2]
		}
		out = append(out, line) // any other violation stays whole: never expected
	}
	return out
}

// violationRe reads the server's log line of a refused publish.
var violationRe = regexp.MustCompile(`user:(\w+)" - Publish Violation - Subject "([^"]+)"`)

// TestConsolePermissionProfile serves the console as the investigator and
// as the console user of deploy/nats/profiles.conf: as investigator its
// actions fail at once with a page that says the NATS user may not take
// them; as console it pauses, resumes, cancels and redrives (recorded with
// the console user as actor), and may publish nothing else: no other audit
// event, no DLQ entry, no state or cache key, no consumer on DROVER_TASKS,
// and nothing that removes or rewrites the audit stream.
func TestConsolePermissionProfile(t *testing.T) {
	t.Parallel()
	s := startPermServer(t)
	names := subjects.MustNames("drover")
	spawn(t, "serve", "--nats-url", s.url, "--user", "worker", "--password", permPasswords["worker"],
		"--http", "", "--log-format", "json", "--worker-id", "perm-console-worker").waitStarted(60 * time.Second)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()

	// A failed task (its dead letter) and a completed one.
	prod := s.connect(t, "producer")
	after, err := producer.AuditLastSeq(ctx, prod.js, names)
	require.NoError(t, err)
	fail := withSim(task("perm-con", "F1"), `{"judge_rejects": 1}`)
	fail.MaxAttempts = 1
	for _, r := range []subjects.TaskRequest{fail, task("perm-con", "T1")} {
		_, err := producer.Publish(ctx, prod.js, names, subjects.DefaultQueue, r)
		require.NoError(t, err)
	}
	done := 0
	require.NoError(t, producer.FollowTerminal(ctx, prod.js, names, "perm-con", after, func(producer.Terminal) bool {
		done++
		return done < 2
	}))
	inv := s.connect(t, "investigator")
	var entries []dlq.Entry
	require.NoError(t, dlq.List(ctx, inv.js, names, dlq.Filter{Workflow: "perm-con"}, func(e dlq.Entry) error {
		entries = append(entries, e)
		return nil
	}))
	require.Len(t, entries, 1)
	redrive := fmt.Sprintf("/dlq/%d/redrive", entries[0].Seq)
	yes := url.Values{"confirm": {"yes"}}

	// As investigator: every view, no action.
	ro := startPermConsole(t, inv)
	for _, path := range []string{"/", "/workflows/perm-con", "/tasks/perm-con/F1", "/audit?workflow=perm-con", "/dlq"} {
		code, _ := ro.get(t, path)
		require.Equal(t, http.StatusOK, code, path)
	}
	code, page := ro.post(t, "/workflows/perm-con/pause", nil)
	require.Equal(t, http.StatusForbidden, code, page)
	require.Contains(t, page, "NATS user may not pause workflows")
	require.Contains(t, page, "drover.ctl.workflow.perm-con.pause")
	require.Contains(t, page, "console profile")
	code, page = ro.post(t, redrive, yes)
	require.Equal(t, http.StatusForbidden, code, page)
	require.Contains(t, page, "NATS user may not redrive dead letters")
	require.Contains(t, page, "drover.audit.perm-con.F1.human.task_redriven")
	code, page = ro.post(t, "/reviews/perm-con/F1/approve", nil)
	require.Equal(t, http.StatusForbidden, code, page)
	require.Contains(t, page, "NATS user may not decide reviews")
	require.Contains(t, page, "drover.ctl.review.perm-con.F1")
	newTask := url.Values{"workflow": {"perm-new"}, "id": {"N1"}, "scope": {"created in the console"}}
	code, page = ro.post(t, "/new/task", newTask)
	require.Equal(t, http.StatusForbidden, code, page)
	require.Contains(t, page, "NATS user may not create tasks")
	require.Contains(t, page, "drover.tasks.default")

	// As console: create a task (the worker accepts it), redrive, pause,
	// resume, cancel.
	con := s.connect(t, "console")
	rw := startPermConsole(t, con)
	code, page = rw.post(t, "/new/task", newTask)
	require.Equal(t, http.StatusSeeOther, code, page)
	code, page = rw.post(t, redrive, yes)
	require.Equal(t, http.StatusOK, code, page)
	require.Contains(t, page, "perm-con-redrive-1")
	for _, action := range []string{"pause", "resume", "cancel"} {
		code, page = rw.post(t, "/workflows/perm-con/"+action, yes)
		require.Equal(t, http.StatusSeeOther, code, "%s: %s", action, page)
	}
	actors := map[subjects.EventType]string{}
	require.NoError(t, audit.Replay(ctx, inv.js, names, audit.Query{Workflow: "perm-con"}, func(r audit.Record) error {
		var md struct{ Actor string }
		if json.Unmarshal(r.Event.Metadata, &md) == nil && md.Actor != "" {
			actors[r.Event.EventType] = md.Actor
		}
		return nil
	}))
	require.Equal(t, map[subjects.EventType]string{subjects.EventTaskRedriven: "console:anonymous", subjects.EventWorkflowPaused: "console:anonymous",
		subjects.EventWorkflowResumed: "console:anonymous", subjects.EventWorkflowCancelled: "console:anonymous"}, actors)

	// And nothing more.
	forge := func(subject string) func(context.Context) error {
		return func(ctx context.Context) error {
			_, err := con.js.Publish(ctx, subject, []byte(`{}`))
			return err
		}
	}
	con.refused(t, "drover.audit.perm-con.F1.system.task_completed", forge("drover.audit.perm-con.F1.system.task_completed"))
	con.refused(t, "drover.audit.perm-con.F1.judge.task_redriven", forge("drover.audit.perm-con.F1.judge.task_redriven"))
	con.refused(t, "drover.dlq.default", forge("drover.dlq.default"))
	con.refused(t, "drover.ctl.workflow.perm-con.purge", func(ctx context.Context) error {
		_, err := con.nc.RequestWithContext(ctx, "drover.ctl.workflow.perm-con.purge", nil)
		return err
	})
	for _, bucket := range []string{names.StateBucket(), names.CacheBucket()} {
		kv, err := con.js.KeyValue(ctx, bucket)
		require.NoError(t, err, bucket)
		con.refused(t, "$KV."+bucket+".perm-con.F1", func(ctx context.Context) error {
			_, err := kv.Put(ctx, "perm-con.F1", []byte(`{}`))
			return err
		})
	}
	con.refused(t, "$JS.API.CONSUMER.CREATE.DROVER_TASKS.thief", func(ctx context.Context) error {
		_, err := con.js.CreateConsumer(ctx, names.TasksStream(), jetstream.ConsumerConfig{Durable: "thief"})
		return err
	})
	before := auditIntact(t, inv.js, 0)
	con.refuseAuditDestruction(t)
	auditIntact(t, inv.js, before)

	want := []string{"investigator drover.ctl.workflow.perm-con.pause", "investigator drover.audit.perm-con.F1.human.task_redriven",
		"investigator drover.ctl.review.perm-con.F1", "investigator drover.tasks.default",
		"console drover.audit.perm-con.F1.system.task_completed", "console drover.audit.perm-con.F1.judge.task_redriven",
		"console drover.dlq.default", "console drover.ctl.workflow.perm-con.purge",
		"console $KV.drover_state.perm-con.F1", "console $KV.drover_cache.perm-con.F1",
		"console $JS.API.CONSUMER.CREATE.DROVER_TASKS.thief"}
	for _, subj := range auditGuard {
		want = append(want, "console "+subj)
	}
	require.ElementsMatch(t, want, s.log.violations(), "the server refused exactly the calls meant to be refused")
}

// permConsole is a console served over conn's connection, and a browser
// session of it (a cookie jar and the session's CSRF token).
type permConsole struct {
	url  string
	c    *http.Client
	csrf string
}

func startPermConsole(t *testing.T, conn *permConn) *permConsole {
	t.Helper()
	cs, err := console.New(console.Deps{NC: conn.nc, JS: conn.js, Names: subjects.MustNames("drover"), Log: natstest.Quiet()},
		console.Config{ControlTimeout: 20 * time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); _ = cs.Run(ctx) }()
	t.Cleanup(func() { cancel(); natstest.Recv(t, done, 30*time.Second) })
	select {
	case <-cs.Ready():
	case <-time.After(30 * time.Second):
		t.Fatal("the console did not load the state bucket")
	}
	srv := httptest.NewServer(cs.Handler())
	t.Cleanup(srv.Close)
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	pc := &permConsole{url: srv.URL, c: &http.Client{Jar: jar, Timeout: 60 * time.Second,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}}
	_, page := pc.get(t, "/dlq")
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if m == nil {
		// The DLQ list has no form: take the token from a workflow board.
		_, page = pc.get(t, "/workflows/perm-con")
		m = regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	}
	require.NotNil(t, m, "a CSRF token on the page")
	pc.csrf = m[1]
	return pc
}

func (pc *permConsole) get(t *testing.T, path string) (int, string) {
	t.Helper()
	resp, err := pc.c.Get(pc.url + path)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}

func (pc *permConsole) post(t *testing.T, path string, form url.Values) (int, string) {
	t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("csrf", pc.csrf)
	req, err := http.NewRequest(http.MethodPost, pc.url+path, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.Header.Set("Origin", pc.url) // a browser's form sends its origin
	resp, err := pc.c.Do(req)
	require.NoError(t, err)
	defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp.StatusCode, string(b)
}
