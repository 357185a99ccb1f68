package tests

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/forge/forgetest"
	"github.com/droverhq/drover/subjects"
)

// prTokenEnv holds the forge token of these tests' worker processes (set
// with t.Setenv: the tests do not run in parallel).
const prTokenEnv = "DROVER_TEST_FORGE_TOKEN"

// startPRProc runs a worker process with workspaces pushing to the rig's
// remote and delivery pull_request to the fake forge f.
func (r *wsRig) startPRProc(id string, f *forgetest.Server, kind string, extra string) *proc {
	r.t.Helper()
	doc := r.configYAML(filepath.Join(r.t.TempDir(), "workspaces"), wsOptions{pushDelay: "100ms"}) +
		fmt.Sprintf("delivery: pull_request\npull_request: {forge: %s, api_url: %q, repo: acme/app, base: main, token_env: %s%s}\n",
			kind, f.APIURL(), prTokenEnv, extra)
	cfg := filepath.Join(r.t.TempDir(), "drover.yaml")
	require.NoError(r.t, os.WriteFile(cfg, []byte(doc), 0o644))
	return r.startProc("--config", cfg, "--worker-id", id, "--ack-wait", "2s")
}

// prOf is result.delivery.pull_request of a completed task.
func prOf(t *testing.T, ev subjects.AuditEvent) subjects.PullRequestResult {
	t.Helper()
	var out struct {
		Delivery struct {
			PullRequest *subjects.PullRequestResult `json:"pull_request"`
		} `json:"delivery"`
	}
	require.NoError(t, json.Unmarshal(ev.Output, &out), "output %s", ev.Output)
	require.NotNil(t, out.Delivery.PullRequest, "output %s", ev.Output)
	return *out.Delivery.PullRequest
}

// drover serve with delivery pull_request, as a process with real git and
// NATS: each approved branch is pushed and gets its pull request; the one
// the forge refuses (422) fails alone with pr_failed and one DLQ entry;
// the token never shows in the worker's logs, the audit stream or the DLQ.
func TestPullRequestDeliveryProcess(t *testing.T) {
	const token = "ghp-process-s3cr3t-token"
	t.Setenv(prTokenEnv, token)
	r := newWSRig(t)
	f := forgetest.New(t, "github", "acme/app", token)
	f.Reject("drover/prwf/edit-bad", "No commits between main and drover/prwf/edit-bad")
	p := r.startPRProc("pr-1", f, "github", ", draft: true")

	after := r.submit(wsTasks("prwf", "edit-a", "edit-b", "edit-bad")...)
	got := r.waitTerminal("prwf", after, 3)
	for _, id := range []string{"edit-a", "edit-b"} {
		require.Equal(t, subjects.EventTaskCompleted, got[id].EventType, "%s: %+v", id, got[id])
		pr := prOf(t, got[id])
		assert.Equal(t, "github", pr.Forge)
		assert.True(t, pr.Draft)
		assert.Contains(t, r.remote.branches("drover/prwf/"), "drover/prwf/"+id, "pushed before the request was opened")
	}
	bad := got["edit-bad"]
	require.Equal(t, subjects.EventTaskFailed, bad.EventType)
	assert.Equal(t, string(subjects.ReasonPRFailed), bad.Action)
	assert.Contains(t, bad.Error, "422 Unprocessable Entity")
	assert.Contains(t, bad.Error, "No commits between main and drover/prwf/edit-bad")

	pulls := f.Pulls()
	require.Len(t, pulls, 2)
	for _, pr := range pulls {
		assert.Equal(t, "main", pr.Base)
		assert.True(t, strings.HasPrefix(pr.Title, strings.TrimPrefix(pr.Head, "drover/prwf/")+": do "), pr.Title)
		assert.Contains(t, pr.Body, "drover audit --workflow prwf --task "+strings.TrimPrefix(pr.Head, "drover/prwf/"))
	}
	dead := r.dlq()
	require.Len(t, dead, 1, "one DLQ entry")
	assert.Equal(t, "edit-bad", dead[0].Header.Get(subjects.HeaderTask))
	assert.Equal(t, string(subjects.ReasonPRFailed), dead[0].Header.Get(subjects.HeaderReason))

	events, err := json.Marshal(r.events(""))
	require.NoError(t, err)
	assert.NotContains(t, string(events), token)
	for _, m := range dead {
		assert.NotContains(t, string(m.Data), token)
		for k := range m.Header {
			assert.NotContains(t, m.Header.Get(k), token)
		}
	}
	assert.NotContains(t, p.stderrText(), token)
	for _, c := range f.Calls() {
		assert.Equal(t, "Bearer "+token, c.Auth)
	}
}

// SIGKILL of the worker process after the forge opened a task's pull
// request and before the worker recorded the task: the worker that takes
// the task over finds the request and updates it; there is one request.
func TestPullRequestWorkerKilledAfterOpening(t *testing.T) {
	const token = "glpat-process-s3cr3t-token"
	t.Setenv(prTokenEnv, token)
	r := newWSRig(t)
	f := forgetest.New(t, "gitlab", "acme/app", token)
	release, opened := make(chan struct{}), make(chan struct{})
	t.Cleanup(func() { close(release) }) // runs before the fake's Close, which waits for its handlers
	var once sync.Once
	f.AfterCreate(func() {
		first := false
		once.Do(func() { first = true })
		if first {
			close(opened)
			<-release // the answer never reaches the first worker
		}
	})
	p1 := r.startPRProc("pr-a", f, "gitlab", ", labels: [drover]")
	after := r.submit(wsTasks("prkill", "edit-a")...)
	select {
	case <-opened:
	case <-time.After(60 * time.Second):
		t.Fatal("the request was never opened")
	}
	p1.signal(syscall.SIGKILL)
	_ = p1.wait(10 * time.Second)

	r.startPRProc("pr-b", f, "gitlab", ", labels: [drover]")
	got := r.waitTerminal("prkill", after, 1)
	require.Equal(t, subjects.EventTaskCompleted, got["edit-a"].EventType, "%+v", got["edit-a"])
	pr := prOf(t, got["edit-a"])
	assert.Equal(t, 1, pr.Number)
	assert.Equal(t, "gitlab", pr.Forge)

	pulls := f.Pulls()
	require.Len(t, pulls, 1, "one request for the task")
	assert.Equal(t, []string{"drover"}, pulls[0].Labels)
	mrs := "/api/v4/projects/acme%2Fapp/merge_requests"
	assert.Equal(t, 1, f.Count(http.MethodPost, mrs), "opened once")
	assert.Equal(t, 1, f.Count(http.MethodPut, mrs+"/1"), "updated by the worker that took the task over")
	assert.Equal(t, map[string]int{"edit-a": 1}, r.agentCalls(), "the agent is not called again")
	assert.Len(t, r.remote.reflog("drover/prkill/edit-a"), 1, "the branch pushed once, not rewritten")
}
