package console

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/blobs"
	"github.com/droverhq/drover/internal/review"
	"github.com/droverhq/drover/subjects"
)

// maxReviewsShown bounds the tasks the Reviews view lists (oldest first).
const maxReviewsShown = 50

// reviewView is one task awaiting review, as the Reviews view shows it.
type reviewView struct {
	Workflow, Task, Mode string
	Attempt              int
	Since                time.Time
	Verdict              string
	Diff                 []DiffLine
	DiffTruncated        bool
	DiffNote             string
}

func (s *Server) reviewsPage(w http.ResponseWriter, r *http.Request) error {
	kv := s.stateKV()
	if kv == nil {
		return s.render(w, r, "reviews", "Reviews", "reviews", map[string]any{}, nil)
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	waiting, err := review.Waiting(ctx, kv)
	if err != nil {
		return err
	}
	total := len(waiting)
	waiting = waiting[:min(len(waiting), maxReviewsShown)]
	views := make([]reviewView, 0, len(waiting))
	rd := s.recordReader(ctx)
	for _, t := range waiting {
		v := reviewView{Workflow: t.Workflow, Task: t.Task, Attempt: t.Attempt, Since: t.UpdatedAt}
		if t.Review != nil {
			v.Mode, v.Since = t.Review.Mode, t.Review.RequestedAt
			v.Verdict = prettyJSON(rd.expand(ctx, t.Review.Verdict))
		}
		patch, note := rd.recordedPatch(ctx, s.names, t.Workflow, t.Task, t.Attempt)
		v.Diff, v.DiffTruncated = Highlight(patch)
		v.DiffNote = note
		views = append(views, v)
	}
	return s.render(w, r, "reviews", "Reviews", "reviews", map[string]any{"Reviews": views, "Total": total}, nil)
}

// recordReader reads a page's records: the audit stream and the blob
// store, each looked up once for the page (nil when it cannot be read).
type recordReader struct {
	audit jetstream.Stream
	blobs *blobs.Store
}

func (s *Server) recordReader(ctx context.Context) recordReader {
	var rd recordReader
	if st, err := s.js.Stream(ctx, s.names.AuditStream()); err == nil {
		rd.audit = st
	}
	if obj, err := s.js.ObjectStore(ctx, s.names.BlobStore()); err == nil {
		rd.blobs = blobs.New(obj)
	}
	return rd
}

// expand fetches what a blob reference stands for; raw when it cannot.
func (rd recordReader) expand(ctx context.Context, raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 || rd.blobs == nil {
		return raw
	}
	if full, err := rd.blobs.Expand(ctx, raw); err == nil {
		return full
	}
	return raw
}

// recordedPatch is the patch the task's attempt recorded (its last
// implementer_change), or a note saying why there is none.
func (rd recordReader) recordedPatch(ctx context.Context, names subjects.Names, wf, task string, attempt int) (string, string) {
	if rd.audit == nil {
		return "", "the audit stream cannot be read"
	}
	m, err := rd.audit.GetLastMsgForSubject(ctx, names.AuditSubject(wf, task, subjects.ActorOf(subjects.RoleImplementer), subjects.EventImplementerChange))
	if err != nil {
		return "", "no recorded change (the task ran without a workspace)"
	}
	var ev struct {
		Attempt  int `json:"attempt"`
		Metadata struct {
			Workspace json.RawMessage `json:"workspace"`
		} `json:"metadata"`
	}
	if json.Unmarshal(m.Data, &ev) != nil || len(ev.Metadata.Workspace) == 0 {
		return "", "no recorded change (the task ran without a workspace)"
	}
	var ch subjects.WorkspaceChange
	if err := json.Unmarshal(rd.expand(ctx, ev.Metadata.Workspace), &ch); err != nil {
		return "", "the recorded change cannot be read: drover task diff " + wf + "/" + task
	}
	patch, err := ch.PatchData()
	if err != nil {
		return "", "the recorded patch cannot be read: drover task diff " + wf + "/" + task
	}
	if ch.Empty || len(patch) == 0 {
		return "", "the attempt changed nothing"
	}
	note := ""
	if ev.Attempt != attempt {
		note = "the last recorded change is of another attempt"
	}
	return string(patch), note
}

// reviewAction records a console user's decision on a task awaiting
// review, with the user as the reviewer ("console:<user>").
func (s *Server) reviewAction(w http.ResponseWriter, r *http.Request) error {
	wf, task, decision := r.PathValue("wf"), r.PathValue("task"), r.PathValue("decision")
	for _, id := range []string{wf, task} {
		if err := subjects.ValidateID(id); err != nil {
			return errStatus(http.StatusBadRequest, "%q: %v", id, err)
		}
	}
	if err := s.post(w, r); err != nil {
		return err
	}
	comment := strings.ToValidUTF8(strings.TrimSpace(r.PostFormValue("comment")), "")
	body := subjects.ReviewDecisionRequest{Decision: decision, Comment: comment, Reviewer: actorOf(sessionOf(r.Context()).user)}
	if err := review.Validate(body); err != nil {
		return errStatus(http.StatusBadRequest, "%v", err)
	}
	b, _ := json.Marshal(body)
	ctx, cancel := context.WithTimeout(r.Context(), s.ctlWait)
	defer cancel()
	msg, err := s.controlRequest(ctx, "decide reviews", s.names.ReviewSubject(wf, task), b, "review "+wf+"/"+task)
	if err != nil {
		return err
	}
	var rep subjects.ReviewReply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return errStatus(http.StatusBadGateway, "review %s/%s: bad reply: %v", wf, task, err)
	}
	if rep.Error != "" {
		return errStatus(http.StatusConflict, "review %s/%s: %s", wf, task, rep.Error)
	}
	s.log.Info("console: review "+decision, "workflow", wf, "task", task, "user", sessionOf(r.Context()).user, "state", rep.State)
	http.Redirect(w, r, s.base+"/reviews", http.StatusSeeOther)
	return nil
}
