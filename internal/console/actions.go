package console

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"

	"github.com/droverhq/drover/internal/dlq"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/workflow"
	"github.com/droverhq/drover/subjects"
)

// maxReason bounds the reason a console user gives an action.
const maxReason = 500

// ControlBody is the body of a control request the console sends: the
// contract's reason, and the console user as the actor, which the worker
// records in the action's audit event.
type ControlBody struct {
	Reason string `json:"reason,omitempty"`
	Actor  string `json:"actor,omitempty"`
}

// actorOf is the actor the console records for its user.
func actorOf(user string) string { return "console:" + user }

// formReason reads the reason field, bounded and valid UTF-8.
func formReason(r *http.Request) string {
	reason := strings.TrimSpace(r.PostFormValue("reason"))
	if len(reason) > maxReason {
		reason = reason[:maxReason]
	}
	return strings.ToValidUTF8(reason, "")
}

// post parses a state-changing request's form, bounded, and checks its
// CSRF token and origin.
func (s *Server) post(w http.ResponseWriter, r *http.Request) error {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := r.ParseForm(); err != nil {
		return errStatus(http.StatusBadRequest, "bad form: %v", err)
	}
	if err := s.checkPost(r); err != nil {
		return errStatus(http.StatusForbidden, "%v", err)
	}
	return nil
}

// controlRequest sends a control request on subject and returns the
// worker's reply: a 403 when the console's NATS user may not publish it
// (what names the action), else a 502 naming label when no worker answers.
func (s *Server) controlRequest(ctx context.Context, what, subject string, body []byte, label string) (*nats.Msg, error) {
	var msg *nats.Msg
	err := s.guarded(ctx, what, func(subj string) bool { return subj == subject }, func(ctx context.Context) (err error) {
		msg, err = s.nc.RequestWithContext(ctx, subject, body)
		return err
	})
	var he httpError
	if errors.As(err, &he) {
		return nil, err
	}
	if err != nil {
		return nil, errStatus(http.StatusBadGateway, "%s: %v (is a worker running?)", label, err)
	}
	return msg, nil
}

func (s *Server) controlAction(w http.ResponseWriter, r *http.Request) error {
	wf, action := r.PathValue("wf"), r.PathValue("action")
	if err := subjects.ValidateID(wf); err != nil {
		return errStatus(http.StatusBadRequest, "workflow %q: %v", wf, err)
	}
	switch action {
	case workflow.ActionPause, workflow.ActionResume, workflow.ActionCancel:
	default:
		return errStatus(http.StatusNotFound, "unknown action %q: want pause, resume or cancel", action)
	}
	if err := s.post(w, r); err != nil {
		return err
	}
	reason := formReason(r)
	if action == workflow.ActionCancel && r.PostFormValue("confirm") != "yes" {
		return s.render(w, r, "confirm", "Cancel "+wf+"?", "workflows", map[string]any{
			"Question": "Cancel workflow " + wf + "?",
			"Detail":   "Its open tasks end with task_cancelled and later submissions to it are rejected. A cancelled workflow cannot be resumed.",
			"Action":   s.base + "/workflows/" + url.PathEscape(wf) + "/cancel", "Button": "Cancel the workflow",
			"Back": s.base + "/workflows/" + url.PathEscape(wf), "Reason": reason, "AskReason": true,
		}, nil)
	}
	body, _ := json.Marshal(ControlBody{Reason: reason, Actor: actorOf(sessionOf(r.Context()).user)})
	ctx, cancel := context.WithTimeout(r.Context(), s.ctlWait)
	defer cancel()
	msg, err := s.controlRequest(ctx, action+" workflows", s.names.CtlSubject(wf, action), body, action+" "+wf)
	if err != nil {
		return err
	}
	var rep workflow.Reply
	if err := json.Unmarshal(msg.Data, &rep); err != nil {
		return errStatus(http.StatusBadGateway, "%s %s: bad reply: %v", action, wf, err)
	}
	if rep.Error != "" {
		return errStatus(http.StatusConflict, "%s %s: %s", action, wf, rep.Error)
	}
	s.log.Info("console: workflow "+action, "workflow", wf, "user", sessionOf(r.Context()).user, "state", rep.State)
	back := s.base + "/workflows/" + url.PathEscape(wf)
	if r.PostFormValue("from") == "list" {
		back = s.base + "/workflows"
	}
	http.Redirect(w, r, back, http.StatusSeeOther)
	return nil
}

func (s *Server) redriveAction(w http.ResponseWriter, r *http.Request) error {
	if err := s.post(w, r); err != nil {
		return err
	}
	e, err := s.entry(r)
	if err != nil {
		return err
	}
	seq := strconv.FormatUint(e.Seq, 10)
	if r.PostFormValue("confirm") != "yes" {
		return s.render(w, r, "confirm", "Redrive "+seq+"?", "dlq", map[string]any{
			"Question": "Redrive dead letter " + seq + " (" + e.Ref() + ")?",
			"Detail":   "Its request is submitted again under a new workflow (" + dlq.BaseWorkflow(e.Workflow) + "-redrive-<n>), keeping the task ID; the entry stays in the DLQ.",
			"Action":   s.base + "/dlq/" + seq + "/redrive", "Button": "Redrive",
			"Back": s.base + "/dlq/" + seq,
		}, nil)
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout)
	defer cancel()
	user := sessionOf(r.Context()).user
	var subs []producer.Submitted
	err = s.guarded(ctx, "redrive dead letters", s.redriveSubject, func(ctx context.Context) (err error) {
		subs, err = dlq.Redrive(ctx, s.js, s.names, []dlq.Entry{e}, dlq.RedriveOptions{Actor: actorOf(user)})
		return err
	})
	var he httpError
	if errors.As(err, &he) {
		return err
	}
	if errors.Is(err, dlq.ErrNotRedrivable) {
		return errStatus(http.StatusConflict, "%v", err)
	}
	if err != nil {
		return err
	}
	s.log.Info("console: dlq redrive", "seq", e.Seq, "user", user, "submitted", len(subs))
	return s.render(w, r, "redriven", "Redriven "+seq, "dlq", map[string]any{"E": dlq.ViewOf(e, false), "Subs": subs}, nil)
}

// redriveSubject tells whether a refused publish is one a redrive makes:
// the request, its task_redriven event, or a JetStream call on the streams
// and bucket it reads and writes.
func (s *Server) redriveSubject(subj string) bool {
	p := s.names.Prefix()
	if strings.HasPrefix(subj, p+".tasks.") || strings.HasPrefix(subj, p+".audit.") {
		return true
	}
	if !strings.HasPrefix(subj, "$JS.API.") {
		return false
	}
	for _, name := range []string{s.names.AuditStream(), s.names.TasksStream(), s.names.DLQStream(), "KV_" + s.names.StateBucket()} {
		if strings.HasSuffix(subj, "."+name) || strings.Contains(subj, "."+name+".") {
			return true
		}
	}
	return false
}
