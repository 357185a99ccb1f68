package console

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/board"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/streamread"
	"github.com/droverhq/drover/subjects"
)

// maxCreateForm bounds the body of a create form: a scope, or a pasted
// board.
const maxCreateForm = 1 << 20

// taskFields are the fields of the New task form, in the order of a
// producer's request.
var taskFields = []string{"workflow", "id", "scope", "verification", "type", "branch", "review"}

// newPage shows the New task and Submit board forms, prefilled from the
// query (a board page links here with its workflow).
func (s *Server) newPage(w http.ResponseWriter, r *http.Request) error {
	q := r.URL.Query()
	form := map[string]string{"queue": subjects.DefaultQueue}
	for _, k := range append(taskFields, "queue") {
		if v := q.Get(k); v != "" {
			form[k] = bound(v, 300)
		}
	}
	return s.renderNew(w, r, http.StatusOK, form, "", nil)
}

// renderNew renders the forms with the values given back and an error
// (escaped by the template like every other text).
func (s *Server) renderNew(w http.ResponseWriter, r *http.Request, code int, form map[string]string, taskErr string, boardErr []string) error {
	if code != http.StatusOK {
		w.WriteHeader(code)
	}
	return s.render(w, r, "new", "New task", "new", map[string]any{
		"F": form, "TaskErr": taskErr, "BoardErr": boardErr,
		"Reviews": []string{subjects.ReviewOff, subjects.ReviewAfterJudge, subjects.ReviewInstead},
	}, nil, code != http.StatusOK)
}

// postForm parses a create form of up to limit bytes and checks its CSRF
// token and origin, as post does for the other actions.
func (s *Server) postForm(w http.ResponseWriter, r *http.Request, limit int64) error {
	r.Body = http.MaxBytesReader(w, r.Body, limit)
	if err := r.ParseForm(); err != nil {
		return errStatus(http.StatusBadRequest, "bad form: %v", err)
	}
	if err := s.checkPost(r); err != nil {
		return errStatus(http.StatusForbidden, "%v", err)
	}
	return nil
}

// taskBody builds a task request's JSON from the form: the fields a
// producer sets, empty ones left out, a missing ID generated.
func taskBody(r *http.Request) (map[string]string, []byte) {
	form := map[string]string{}
	body := map[string]string{}
	for _, k := range append(taskFields, "queue") {
		v := r.PostFormValue(k)
		if k == "scope" || k == "verification" {
			// A browser sends a textarea's lines ended by CRLF: the
			// request carries them as the CLI would, with LF.
			v = strings.ReplaceAll(v, "\r\n", "\n")
		} else {
			v = strings.TrimSpace(v)
		}
		form[k] = v
		if v != "" && k != "queue" {
			body[k] = v
		}
	}
	if body["id"] == "" {
		body["id"] = newTaskID()
		form["id"] = body["id"]
	}
	raw, _ := json.Marshal(body) // strings always encode
	return form, raw
}

// newTaskID generates a task ID: "T-" and ten random base32 characters.
func newTaskID() string {
	const alphabet = "abcdefghijklmnopqrstuvwxyz234567"
	var b [10]byte
	_, _ = rand.Read(b[:])
	for i := range b {
		b[i] = alphabet[b[i]%32]
	}
	return "T-" + string(b[:])
}

// createTask publishes one task request from the New task form, decoded
// by the contract's strict decoder first, then waits for a worker's
// admission: accepted, it shows the task; refused, it shows why.
func (s *Server) createTask(w http.ResponseWriter, r *http.Request) error {
	if err := s.postForm(w, r, maxCreateForm); err != nil {
		return err
	}
	form, raw := taskBody(r)
	queue := form["queue"]
	if queue == "" {
		queue = subjects.DefaultQueue
	}
	if err := subjects.ValidateQueue(queue); err != nil {
		return s.renderNew(w, r, http.StatusUnprocessableEntity, form, "queue: "+err.Error(), nil)
	}
	req, rej := subjects.DecodeTask(raw, subjects.Limits{})
	if rej != nil {
		return s.renderNew(w, r, http.StatusUnprocessableEntity, form, "Invalid task: "+rej.Msg, nil)
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout+s.admWait)
	defer cancel()
	after, err := producer.AuditLastSeq(ctx, s.js, s.names)
	if err != nil {
		return errStatus(http.StatusBadGateway, "%v", err)
	}
	user := sessionOf(r.Context()).user
	subs, err := s.publish(ctx, queue, []subjects.TaskRequest{req})
	if err != nil {
		return err
	}
	s.log.Info("console: task created", "workflow", req.Workflow, "task", req.ID, "user", user, "seq", subs[0].Seq)
	taskURL := s.base + "/tasks/" + url.PathEscape(req.Workflow) + "/" + url.PathEscape(req.ID)
	if subs[0].Duplicate { // stored before: its events are older than after
		http.Redirect(w, r, taskURL, http.StatusSeeOther)
		return nil
	}
	ev, err := s.firstEvent(ctx, s.names.AuditTaskFilter(req.Workflow, req.ID), after, s.admWait)
	switch {
	case err == nil && ev.EventType == subjects.EventTaskRejected:
		return s.renderNew(w, r, http.StatusUnprocessableEntity, form,
			fmt.Sprintf("Refused by the worker's admission (%s): %s", ev.Action, ev.Error), nil)
	case err == nil:
		http.Redirect(w, r, taskURL, http.StatusSeeOther)
		return nil
	}
	return s.render(w, r, "created", "Submitted", "new", map[string]any{"Subs": subs, "Workflow": req.Workflow,
		"Waiting": "no worker has picked it up yet"}, nil)
}

// submitBoard publishes a pasted board's open rows as one workflow, parsed
// and refused whole on any problem exactly as drover board submit does.
func (s *Server) submitBoard(w http.ResponseWriter, r *http.Request) error {
	if err := s.postForm(w, r, maxCreateForm); err != nil {
		return err
	}
	form := map[string]string{}
	for _, k := range []string{"workflow", "type", "queue", "board"} {
		form["board_"+k] = strings.TrimSpace(r.PostFormValue(k))
	}
	form["board_board"] = r.PostFormValue("board")
	fail := func(msgs ...string) error {
		return s.renderNew(w, r, http.StatusUnprocessableEntity, form, "", msgs)
	}
	wf, typ, queue := form["board_workflow"], form["board_type"], form["board_queue"]
	if queue == "" {
		queue = subjects.DefaultQueue
	}
	if err := subjects.ValidateQueue(queue); err != nil {
		return fail("queue: " + err.Error())
	}
	if err := subjects.ValidateID(wf); err != nil {
		return fail("workflow: " + err.Error())
	}
	if typ != "" {
		if err := board.ValidateType(typ); err != nil {
			return fail("type: " + err.Error())
		}
	}
	name := wf + ".md"
	b, problems := board.Parse([]byte(form["board_board"]), name)
	if len(problems) > 0 {
		msgs := make([]string, 0, len(problems)+1)
		for _, p := range problems {
			msgs = append(msgs, p.String())
		}
		return fail(append(msgs, fmt.Sprintf("%d problem(s), nothing submitted", len(problems)))...)
	}
	reqs := b.Requests(wf, typ)
	if len(reqs) == 0 {
		tasks, _ := b.Counts()
		return fail(fmt.Sprintf("no open tasks (%d done), nothing submitted", tasks))
	}
	for _, req := range reqs { // every request checked before any is published
		if _, err := producer.Msg(s.names, queue, req); err != nil {
			return fail(err.Error() + "; nothing submitted")
		}
	}
	ctx, cancel := context.WithTimeout(r.Context(), readTimeout+producer.SubmitTimeout)
	defer cancel()
	subs, err := s.publish(ctx, queue, reqs)
	if err != nil {
		return err
	}
	s.log.Info("console: board submitted", "workflow", wf, "tasks", len(subs), "user", sessionOf(r.Context()).user)
	return s.render(w, r, "created", "Submitted", "new", map[string]any{"Subs": subs, "Workflow": wf}, nil)
}

// publish publishes reqs to queue, in order, through the producer: a
// publish the console's NATS user may not make is a 403 that says so.
func (s *Server) publish(ctx context.Context, queue string, reqs []subjects.TaskRequest) ([]producer.Submitted, error) {
	subject := s.names.TaskSubject(queue)
	var subs []producer.Submitted
	err := s.guarded(ctx, "create tasks", func(subj string) bool { return subj == subject }, func(ctx context.Context) error {
		for _, req := range reqs {
			sub, err := producer.Publish(ctx, s.js, s.names, queue, req)
			if err != nil {
				return err
			}
			subs = append(subs, sub)
		}
		return nil
	})
	var he httpError
	if errors.As(err, &he) {
		return subs, err
	}
	if err != nil {
		return subs, errStatus(http.StatusBadGateway, "submitted %d of %d task(s): %v", len(subs), len(reqs), err)
	}
	return subs, nil
}

// errNoEvent is firstEvent's answer when nothing arrived in time.
var errNoEvent = errors.New("no event yet")

// firstEvent waits up to wait for the first audit event on filter stored
// after sequence after.
func (s *Server) firstEvent(ctx context.Context, filter string, after uint64, wait time.Duration) (subjects.AuditEvent, error) {
	ctx, cancel := context.WithTimeout(ctx, wait)
	defer cancel()
	cons, err := streamread.OrderedConsumer(ctx, s.js, s.names.AuditStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{filter}, DeliverPolicy: jetstream.DeliverByStartSequencePolicy, OptStartSeq: after + 1})
	if err != nil {
		return subjects.AuditEvent{}, err
	}
	defer streamread.DeleteConsumer(context.WithoutCancel(ctx), streamread.StreamOf(s.js, s.names.AuditStream()), cons)
	for {
		msg, err := cons.Next(jetstream.FetchContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return subjects.AuditEvent{}, errNoEvent
			}
			return subjects.AuditEvent{}, err
		}
		var ev subjects.AuditEvent
		if json.Unmarshal(msg.Data(), &ev) == nil {
			return ev, nil
		}
	}
}

// bound cuts s to at most n bytes of valid UTF-8.
func bound(s string, n int) string {
	if len(s) > n {
		s = s[:n]
	}
	return strings.ToValidUTF8(s, "")
}
