package console_test

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/console"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// The Reviews view lists a task awaiting review with its diff and the
// judge's verdict; approve and reject are posted with the session's CSRF
// token, and sent on the review subject with the console user as the
// reviewer.
func TestReviewsViewListsAndDecides(t *testing.T) {
	f := newFixture(t, console.Auth{})
	now := time.Now().UTC()
	st := subjects.TaskState{Workflow: "wf-rv", Task: "T1", State: subjects.StateAwaitingReview, Stage: subjects.StageReview, Attempt: 1,
		Worker: "w1", StartedAt: now, UpdatedAt: now,
		Review: &subjects.TaskReview{Mode: subjects.ReviewAfterJudge, RequestedAt: now, Verdict: json.RawMessage(`{"verdict":"approve","feedback":"tidy <b>work</b>"}`)}}
	b, _ := json.Marshal(st)
	_, err := f.kv.Put(context.Background(), subjects.StateKey("wf-rv", "T1"), b)
	require.NoError(t, err)
	ch := subjects.WorkspaceChange{Branch: "drover/wf-rv/T1", Base: "b", Head: "h", Files: []subjects.WorkspaceFile{{Path: "a.txt", Status: "M", Added: 1}}}
	ch.SetPatch([]byte("diff --git a/a.txt b/a.txt\n--- a/a.txt\n+++ b/a.txt\n@@ -1 +1,2 @@\n one\n+two\n"))
	ev := subjects.AuditEvent{EventID: "wf-rv/T1/1/implementer/implementer_change", EventType: subjects.EventImplementerChange, WorkflowID: "wf-rv", TaskID: "T1",
		Actor: subjects.ActorOf(subjects.RoleImplementer), Attempt: 1, Timestamp: now, Metadata: mustMarshal(t, map[string]any{"workspace": ch})}
	_, err = f.js.Publish(context.Background(), names.AuditSubject("wf-rv", "T1", ev.Actor, ev.EventType), mustMarshal(t, ev))
	require.NoError(t, err)

	got := make(chan subjects.ReviewDecisionRequest, 1)
	sub, err := f.nc.Subscribe(names.ReviewSubject("wf-rv", "T1"), func(m *nats.Msg) {
		var r subjects.ReviewDecisionRequest
		_ = json.Unmarshal(m.Data, &r)
		got <- r
		_ = m.Respond(mustMarshal(t, subjects.ReviewReply{Workflow: "wf-rv", Task: "T1", State: subjects.StatePaused, Revision: 9}))
	})
	require.NoError(t, err)
	t.Cleanup(func() { _ = sub.Unsubscribe() })

	c := f.browser()
	_, page := f.get(c, "/reviews")
	for _, want := range []string{"wf-rv/T1", "after_judge", `<span class="d-add">&#43;two</span>`, "tidy &lt;b&gt;work&lt;/b&gt;", "/reviews/wf-rv/T1/approve", "/reviews/wf-rv/T1/reject"} {
		require.Contains(t, page, want)
	}
	token := csrfField.FindStringSubmatch(page)[1]
	_, taskPage := f.get(c, "/tasks/wf-rv/T1")
	require.Contains(t, taskPage, "after_judge: awaiting review since")

	post := func(form url.Values) int {
		req, err := http.NewRequest(http.MethodPost, f.srv.URL+"/reviews/wf-rv/T1/reject", strings.NewReader(form.Encode()))
		require.NoError(t, err)
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", f.srv.URL)
		resp, err := c.Do(req)
		require.NoError(t, err)
		_ = resp.Body.Close()
		return resp.StatusCode
	}
	require.Equal(t, http.StatusForbidden, post(url.Values{"comment": {"no"}}), "no CSRF token")
	require.Equal(t, http.StatusBadRequest, post(url.Values{"csrf": {token}}), "a rejection needs a comment")
	require.Empty(t, got)
	require.Equal(t, http.StatusSeeOther, post(url.Values{"csrf": {token}, "comment": {"handle the empty case"}}))
	r := natstest.Recv(t, got, 30*time.Second)
	require.Equal(t, subjects.ReviewReject, r.Decision)
	require.Equal(t, "handle the empty case", r.Comment)
	require.True(t, strings.HasPrefix(r.Reviewer, "console:"), r.Reviewer)
}

func mustMarshal(t *testing.T, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}
