package worker_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/backoff"
	"github.com/droverhq/drover/internal/forge"
	"github.com/droverhq/drover/internal/forge/forgetest"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

const prToken = "ghp-worker-s3cr3t-token"

// lockedBuffer is a log destination that tests read while workers write.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// withPullRequests makes b's workers deliver pull requests to a fake of
// kind that accepts prToken, the client sending token; it returns the fake
// and the workers' log.
func withPullRequests(t *testing.T, b *wsBundle, kind, token string, tries int, mod func(*forge.Config)) (*forgetest.Server, *lockedBuffer) {
	t.Helper()
	f := forgetest.New(t, kind, "acme/app", prToken)
	cfg := forge.Config{Forge: kind, APIURL: f.APIURL(), Repo: "acme/app", Base: "main", TokenEnv: "FORGE_TOKEN"}
	if mod != nil {
		mod(&cfg)
	}
	c, err := forge.New(cfg, token, forge.WithRetry(backoff.Policy{Base: time.Millisecond, Max: 5 * time.Millisecond}, tries))
	require.NoError(t, err)
	logs := &lockedBuffer{}
	b.pullRequests, b.log = c, slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	return f, logs
}

// streamText is every message of a stream, headers and data.
func streamText(t *testing.T, js jetstream.JetStream, name string) string {
	t.Helper()
	ctx := context.Background()
	s, err := js.Stream(ctx, name)
	require.NoError(t, err)
	info, err := s.Info(ctx)
	require.NoError(t, err)
	var out bytes.Buffer
	for seq := info.State.FirstSeq; seq <= info.State.LastSeq && info.State.Msgs > 0; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted
		}
		for k, vs := range m.Header {
			out.WriteString(k + ": " + vs[0] + "\n")
		}
		out.Write(m.Data)
		out.WriteByte('\n')
	}
	return out.String()
}

// deliveredPR is the pull request in a task_completed event's output.
func deliveredPR(t *testing.T, ev subjects.AuditEvent) subjects.PullRequestResult {
	t.Helper()
	var out struct {
		Delivery struct {
			PullRequest *subjects.PullRequestResult `json:"pull_request"`
		} `json:"delivery"`
		Workspace subjects.WorkspaceResult `json:"workspace"`
	}
	require.NoError(t, json.Unmarshal(ev.Output, &out), "output %s", ev.Output)
	require.NotNil(t, out.Delivery.PullRequest, "output %s", ev.Output)
	require.True(t, out.Workspace.Pushed, "output %s", ev.Output)
	return *out.Delivery.PullRequest
}

// With delivery pull_request, each approved branch is pushed and gets one
// pull request whose title, base and body say what the task was; a
// request the forge refuses (422: no commits between) fails only its task
// with pr_failed and one DLQ entry; the token is nowhere in the audit
// stream, the DLQ or the logs.
func TestPullRequestForEachApprovedTask(t *testing.T) {
	b := newWSBundle(t)
	f, logs := withPullRequests(t, b, forge.GitHub, prToken, 3, func(c *forge.Config) { c.Draft, c.Labels = true, []string{"drover"} })
	f.Reject("drover/wf-pr/BAD", "No commits between main and drover/wf-pr/BAD")
	a := &agent{t: t, edit: editTask}
	b.start(t, a.set(), t.TempDir(), true, 5*time.Second)

	term := b.submit(t, "wf-pr",
		subjects.TaskRequest{ID: "OK1", Scope: "Add feature one\nwith ``` fences and @someone"},
		subjects.TaskRequest{ID: "OK2", Scope: "Add feature two"},
		subjects.TaskRequest{ID: "BAD", Scope: "Nothing to propose"})

	for _, id := range []string{"OK1", "OK2"} {
		require.Equal(t, subjects.EventTaskCompleted, term[id].EventType, "%s: %+v", id, term[id])
		pr := deliveredPR(t, term[id])
		assert.Equal(t, forge.GitHub, pr.Forge)
		assert.True(t, pr.Draft)
		assert.Positive(t, pr.Number)
		assert.Contains(t, pr.URL, "/acme/app/pull/")
		git(t, b.repo, "rev-parse", "--verify", "refs/heads/drover/wf-pr/"+id)
	}
	require.Equal(t, subjects.EventTaskFailed, term["BAD"].EventType)
	assert.Equal(t, string(subjects.ReasonPRFailed), term["BAD"].Action)
	assert.Contains(t, term["BAD"].Error, "422 Unprocessable Entity")
	assert.Contains(t, term["BAD"].Error, "No commits between main and drover/wf-pr/BAD")

	pulls := map[string]forgetest.PR{}
	for _, p := range f.Pulls() {
		pulls[p.Head] = p
	}
	require.Len(t, pulls, 2, "one request per approved task")
	one := pulls["drover/wf-pr/OK1"]
	assert.Equal(t, "main", one.Base)
	assert.Equal(t, "OK1: Add feature one", one.Title)
	assert.True(t, one.Draft)
	assert.Equal(t, []string{"drover"}, one.Labels)
	for _, want := range []string{
		"task `wf-pr/OK1`",
		"### Scope\n\n````text\nAdd feature one\nwith ``` fences and @someone\n````\n",
		"### Judge's verdict\n\n```text\n{\n  \"verdict\": \"approve\"\n}\n```\n",
		"### Attempts\n\n1\n",
		"drover audit --workflow wf-pr --task OK1\ndrover task diff wf-pr/OK1\n",
	} {
		assert.Contains(t, one.Body, want)
	}
	assert.Contains(t, pulls["drover/wf-pr/OK2"].Title, "OK2: Add feature two")

	ctx := context.Background()
	dlq, err := b.js.Stream(ctx, b.names.DLQStream())
	require.NoError(t, err)
	info, err := dlq.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(1), info.State.Msgs, "one DLQ entry")
	m, err := dlq.GetLastMsgForSubject(ctx, b.names.DLQSubject(subjects.DefaultQueue))
	require.NoError(t, err)
	assert.Equal(t, string(subjects.ReasonPRFailed), m.Header.Get(subjects.HeaderReason))
	assert.Equal(t, "BAD", m.Header.Get(subjects.HeaderTask))

	assert.NotContains(t, streamText(t, b.js, b.names.AuditStream()), prToken)
	assert.NotContains(t, streamText(t, b.js, b.names.DLQStream()), prToken)
	assert.NotContains(t, logs.String(), prToken)
	for _, c := range f.Calls() {
		assert.Equal(t, "Bearer "+prToken, c.Auth, "the token goes in its header only")
	}
}

// A task delivered again after its request was opened (the create's
// answer lost, then the forge down past the client's tries: the pipeline
// retries the delivery) finds the request and updates it: one request.
func TestPullRequestRedeliveryUpdatesTheRequest(t *testing.T) {
	b := newWSBundle(t)
	f, _ := withPullRequests(t, b, forge.GitLab, prToken, 2, nil)
	f.LoseCreates(1)
	var mu sync.Mutex
	created, failures := false, 0
	f.Before(func(r *http.Request) forgetest.Answer {
		mu.Lock()
		defer mu.Unlock()
		if r.Method == http.MethodPost {
			created = true
			return forgetest.Answer{}
		}
		if created && failures < 2 {
			failures++
			return forgetest.Answer{Status: http.StatusServiceUnavailable, Body: `{"message":"maintenance"}`}
		}
		return forgetest.Answer{}
	})
	a := &agent{t: t, edit: editTask}
	b.start(t, a.set(), t.TempDir(), true, 5*time.Second)

	term := b.submit(t, "wf-again", subjects.TaskRequest{ID: "T1", Scope: "Change it"})
	require.Equal(t, subjects.EventTaskCompleted, term["T1"].EventType, "%+v", term["T1"])
	pr := deliveredPR(t, term["T1"])
	assert.Equal(t, subjects.PullRequestResult{URL: f.URL + "/acme/app/-/merge_requests/1", Number: 1, Forge: forge.GitLab}, pr)

	require.Len(t, f.Pulls(), 1, "the redelivered task did not open a second request")
	mrs := "/api/v4/projects/acme%2Fapp/merge_requests"
	assert.Equal(t, 1, f.Count(http.MethodPost, mrs))
	assert.Equal(t, 1, f.Count(http.MethodPut, mrs+"/1"))
	retried := b.events(t, "wf-again", "T1", subjects.EventTaskRetried)
	require.NotEmpty(t, retried, "the delivery was retried by the pipeline")
	assert.Contains(t, retried[0].Error, "503 Service Unavailable")
	assert.Equal(t, 1, a.implCalls(), "the agent is not called again")
}

// A token the forge does not accept (401) fails the task with pr_failed,
// a clear error and one DLQ entry; neither token shows anywhere.
func TestPullRequestRefusedToken(t *testing.T) {
	b := newWSBundle(t)
	const wrong = "gitea-wrong-t0ken-value"
	f, logs := withPullRequests(t, b, forge.Gitea, wrong, 3, nil)
	a := &agent{t: t, edit: editTask}
	b.start(t, a.set(), t.TempDir(), true, 5*time.Second)

	term := b.submit(t, "wf-401", subjects.TaskRequest{ID: "T1", Scope: "one"})
	require.Equal(t, subjects.EventTaskFailed, term["T1"].EventType)
	assert.Equal(t, string(subjects.ReasonPRFailed), term["T1"].Action)
	assert.Contains(t, term["T1"].Error, "gitea pull request for drover/wf-401/T1")
	assert.Contains(t, term["T1"].Error, "401 Unauthorized")
	assert.Empty(t, f.Pulls())
	assert.Len(t, f.Calls(), 1, "a refused token is not tried again")

	ctx := context.Background()
	dlq, err := b.js.Stream(ctx, b.names.DLQStream())
	require.NoError(t, err)
	info, err := dlq.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(1), info.State.Msgs)
	for _, text := range []string{streamText(t, b.js, b.names.AuditStream()), streamText(t, b.js, b.names.DLQStream()), logs.String()} {
		assert.NotContains(t, text, wrong)
		assert.NotContains(t, text, prToken)
	}
}

// A worker with pull requests needs workspaces that push.
func TestPullRequestsNeedPush(t *testing.T) {
	f := forgetest.New(t, forge.GitHub, "acme/app", prToken)
	c, err := forge.New(forge.Config{Forge: forge.GitHub, APIURL: f.APIURL(), Repo: "acme/app", TokenEnv: "T"}, prToken)
	require.NoError(t, err)
	_, err = worker.New(nil, worker.Config{PullRequests: c})
	require.ErrorContains(t, err, "delivery pull_request needs workspaces with push on")
}
