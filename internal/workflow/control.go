package workflow

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// The control actions.
const (
	ActionPause  = "pause"
	ActionResume = "resume"
	ActionCancel = "cancel"
)

// Reply is the answer to a control request, as the contract gives it.
type Reply struct {
	Workflow string `json:"workflow,omitempty"`
	State    string `json:"state,omitempty"`
	Revision uint64 `json:"revision,omitempty"`
	Error    string `json:"error,omitempty"`
}

// Controller answers control requests; every worker runs one in the queue
// group "drover-ctl", so exactly one of them handles each request.
type Controller struct {
	nc    *nats.Conn
	names subjects.Names
	kv    jetstream.KeyValue
	store *state.Store
	audit jetstream.Stream
	pub   *audit.Publisher
	pipe  *pipeline.Pipeline
	log   *slog.Logger
	now   func() time.Time
}

// Deps are what a controller works with.
type Deps struct {
	// NC is the connection the control subjects are answered on; required.
	NC *nats.Conn
	// JS publishes the audit events of control actions; required.
	JS jetstream.JetStream
	// Names names the subjects; required.
	Names subjects.Names
	// State is the bucket of workflow and task state; required.
	State jetstream.KeyValue
	// Audit is the audit stream, read to list a workflow's tasks; required.
	Audit jetstream.Stream
	// Pipeline publishes parked tasks again on resume and cancels them on
	// cancel; nil only where no task is parked (tests of the other actions).
	Pipeline *pipeline.Pipeline
	// Log is the controller's logger; nil discards.
	Log *slog.Logger
}

// validate names the first missing dependency.
func (d Deps) validate() error {
	switch {
	case d.NC == nil:
		return errors.New("workflow: Deps.NC is required")
	case d.JS == nil:
		return errors.New("workflow: Deps.JS is required")
	case d.Names.Prefix() == "":
		return errors.New("workflow: Deps.Names is required")
	case d.State == nil:
		return errors.New("workflow: Deps.State is required")
	case d.Audit == nil:
		return errors.New("workflow: Deps.Audit is required")
	}
	return nil
}

// NewController returns a controller, or an error naming a missing
// dependency.
func NewController(deps Deps) (*Controller, error) {
	if err := deps.validate(); err != nil {
		return nil, err
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Controller{nc: deps.NC, names: deps.Names, kv: deps.State, store: state.New(deps.State), audit: deps.Audit,
		pub: audit.NewPublisher(deps.JS, deps.Names), pipe: deps.Pipeline, log: log, now: time.Now}, nil
}

// Start subscribes to the control subjects; the returned stop drains the
// subscription, letting a request being handled finish.
func (c *Controller) Start(ctx context.Context) (stop func(), err error) {
	sub, err := c.nc.QueueSubscribe(c.names.CtlWildcard(), "drover-ctl", func(m *nats.Msg) {
		reply := c.handle(ctx, m)
		b, _ := json.Marshal(reply)
		if err := m.Respond(b); err != nil && m.Reply != "" {
			c.log.Warn("control: could not reply", "subject", m.Subject, "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("control: subscribe %s: %w", c.names.CtlWildcard(), err)
	}
	return func() { _ = sub.Drain() }, nil
}

func (c *Controller) handle(ctx context.Context, m *nats.Msg) Reply {
	parts := strings.Split(m.Subject, ".")
	if len(parts) != 5 {
		return Reply{Error: fmt.Sprintf("control subject %q is not <prefix>.ctl.workflow.<workflow>.<action>", m.Subject)}
	}
	wf, err := subjects.ParseToken(parts[3])
	if err == nil {
		err = subjects.ValidateID(wf)
	}
	if err != nil {
		return Reply{Error: fmt.Sprintf("workflow token %q: %v", parts[3], err)}
	}
	var body struct {
		Reason string `json:"reason"`
		Actor  string `json:"actor"`
	}
	if len(strings.TrimSpace(string(m.Data))) > 0 {
		if err := json.Unmarshal(m.Data, &body); err != nil {
			return Reply{Workflow: wf, Error: fmt.Sprintf(`body must be {"reason": "...", "actor": "..."}: %v`, err)}
		}
	}
	if err := ValidateActor(body.Actor); err != nil {
		return Reply{Workflow: wf, Error: err.Error()}
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	r, err := c.ApplyAs(cctx, wf, parts[4], body.Reason, body.Actor)
	if err != nil {
		return Reply{Workflow: wf, Error: err.Error()}
	}
	return r
}

// Apply performs a control action: the workflow's state by compare-and-set,
// its audit event, then the tasks (resume publishes the parked ones again,
// cancel ends the parked ones; running ones stop at their next role).
func (c *Controller) Apply(ctx context.Context, wf, action, reason string) (Reply, error) {
	return c.ApplyAs(ctx, wf, action, reason, "")
}

// MaxActorBytes bounds the actor of a control request.
const MaxActorBytes = 128

// ValidateActor checks the optional actor of a control request: at most
// MaxActorBytes of valid UTF-8 with no control character.
func ValidateActor(a string) error {
	if len(a) > MaxActorBytes || !utf8.ValidString(a) || strings.ContainsFunc(a, unicode.IsControl) {
		return fmt.Errorf("actor %.40q: want at most %d bytes of printable text", a, MaxActorBytes)
	}
	return nil
}

// ApplyAs is Apply on behalf of actor (who asked, e.g. "console:alice"),
// which the audit event records in its metadata; "" records none.
func (c *Controller) ApplyAs(ctx context.Context, wf, action, reason, actor string) (Reply, error) {
	target := map[string]string{ActionPause: subjects.StatePaused, ActionResume: subjects.StateRunning, ActionCancel: subjects.StateCancelled}[action]
	if target == "" {
		return Reply{}, fmt.Errorf("unknown action %q: want pause, resume or cancel", action)
	}
	for range 8 {
		cur, err := c.store.GetWorkflow(ctx, wf)
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			return Reply{}, err
		}
		now := cur.State
		if now == "" {
			now = subjects.StateRunning
		}
		switch {
		case now == subjects.StateCancelled && action != ActionCancel:
			return Reply{}, fmt.Errorf("workflow %s is cancelled; it cannot be %sd", wf, action)
		case now == target:
			return Reply{Workflow: wf, State: now, Revision: cur.Revision}, nil // nothing to do
		}
		rev, err := c.store.WriteWorkflow(ctx, wf, subjects.WorkflowState{State: target, Reason: reason, UpdatedAt: c.now().UTC()}, cur.Revision)
		if errors.Is(err, state.ErrConflict) {
			continue // another controller moved it; decide again
		}
		if err != nil {
			return Reply{}, fmt.Errorf("workflow %s: %w", wf, err)
		}
		if err := c.record(ctx, wf, target, reason, actor, rev); err != nil {
			return Reply{}, err
		}
		if err := c.settleTasks(ctx, wf, action, reason); err != nil {
			return Reply{}, err
		}
		c.log.Info("workflow "+target, "workflow", wf, "revision", rev, "reason", reason)
		return Reply{Workflow: wf, State: target, Revision: rev}, nil
	}
	return Reply{}, fmt.Errorf("workflow %s: its state kept changing; try again", wf)
}
