package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/backoff"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// taskRun is one delivery's view of a task while it runs.
type taskRun struct {
	d           consumers.Msg
	req         subjects.TaskRequest
	st          subjects.TaskState // as committed at rev (or to be created)
	rev         uint64             // 0: the state does not exist yet
	lastSeq     uint64             // the task's last audit sequence, when known
	traceparent string
	runnerEnded time.Time             // when this delivery's last runner returned (zero: none yet)
	plan        json.RawMessage       // the planner's output, once known
	puts        []pendingPut          // cache writes in flight
	deferred    []subjects.OutboxItem // events of a role that did not write (deferPlan): the next write carries them first
	flushing    chan error            // the outbox published behind the last write, if any
	flushErr    error                 // how it went, once known and not yet joined
	// Workspaces on: the workspace this delivery resolved and its next
	// commit pins (when the state has none yet), its open worktree, and
	// the change the worktree holds (the last recorded attempt's).
	wsPin  *subjects.TaskWorkspace
	ws     Workspace
	change *subjects.WorkspaceChange
	// session is the agent session this delivery's last implementer left
	// (recorded with its attempt).
	session *subjects.AgentSession
}

// claim finds where the task stands and makes this delivery its owner. It
// returns ok=false with the outcome when there is nothing (more) to run.
//
// The state is read before any role runs, so a duplicate request is
// rejected without spending a model call. A first delivery with no state
// writes nothing yet: its first commit creates the state, so a cold task
// pays for no separate claim write.
func (p *Pipeline) claim(ctx context.Context, d consumers.Msg, req subjects.TaskRequest) (*taskRun, consumers.Outcome, bool) {
	for range 4 {
		cur, err := p.d.State.GetTask(ctx, req.Workflow, req.ID)
		if err != nil && !errors.Is(err, state.ErrNotFound) {
			return nil, p.nakOutcome(p.requestLog(d, req.Workflow, req.ID), d, err), false
		}
		step := decideClaim(claimView{
			exists: err == nil, state: cur.State, requestSeq: cur.StreamSeq, owner: cur.Delivery,
			streamSeq: d.StreamSeq, numDelivered: d.NumDelivered,
			revision: cur.Revision, retryFrom: cur.RetryFrom, retryRev: retryRevision(d),
		})
		if step == claimFresh || step == claimCreate {
			if rej := p.admitRequest(d, req); rej != nil {
				return nil, p.reject(ctx, d, rej), false
			}
		}
		t := p.newRun(d, req)
		switch step {
		case claimFresh:
			return t, consumers.Outcome{}, true
		case claimCreate:
			switch err := p.commit(ctx, t, nil); {
			case err == nil:
				return t, consumers.Outcome{}, true
			case errors.Is(err, errCreateConflict):
				continue
			default:
				return nil, p.errOutcome(t, err), false
			}
		case claimDuplicate:
			return nil, p.rejectDuplicate(ctx, d, req, cur), false
		case claimAbandon:
			return nil, consumers.Outcome{Action: consumers.Abandon, Err: errors.New("a later delivery owns the task")}, false
		case claimStale:
			p.requestLog(d, req.Workflow, req.ID).Info("request the task has moved on from; acked without running",
				"owner_stream_seq", cur.StreamSeq, "retry_revision", retryRevision(d))
			return nil, consumers.Outcome{Action: consumers.Ack}, false
		}
		t.st, t.rev = cur.TaskState, cur.Revision
		// Resume: a parked task published again by resume; this request
		// owns it now and continues from the stage where it stopped.
		// Retry: the retry the task's last write scheduled; this request
		// owns the task now, the one that scheduled it is done. Take-over:
		// a write that re-publishes the state's outbox.
		var mutate func(*subjects.TaskState)
		var outbox []subjects.OutboxItem
		switch step {
		case claimResume:
			mutate = func(s *subjects.TaskState) {
				s.State, s.Request, s.Queue, s.StreamSeq = subjects.StateRunning, nil, d.Queue, d.StreamSeq
			}
		case claimRetry:
			from := cur.StreamSeq
			mutate = func(s *subjects.TaskState) {
				// The tries spent: those before the scheduling request,
				// and its deliveries up to the one that scheduled this.
				s.TryBase += s.Delivery
				s.Queue, s.StreamSeq, s.RetryFrom = d.Queue, d.StreamSeq, from
			}
		case claimTakeOver:
			mutate, outbox = func(*subjects.TaskState) {}, t.st.Outbox
		}
		if mutate != nil {
			switch _, err := p.casState(ctx, t, mutate, outbox); {
			case errors.Is(err, state.ErrConflict):
				continue
			case err != nil:
				return nil, p.nakOutcome(p.requestLog(d, req.Workflow, req.ID), d, err), false
			}
			if step != claimTakeOver {
				return t, consumers.Outcome{}, true
			}
		}
		if err := p.flush(ctx, t, -1); err != nil {
			return nil, p.errOutcome(t, err), false
		}
		if out, done := settled(t.st); done {
			return nil, out, false
		}
		return t, consumers.Outcome{}, true
	}
	return nil, p.nakOutcome(p.requestLog(d, req.Workflow, req.ID), d, errors.New("state kept changing while claiming the task")), false
}

// retryRevision is the request's Drover-Retry header: the revision of the
// state write that scheduled it, 0 when it has none or it does not parse.
func retryRevision(d consumers.Msg) uint64 {
	v := d.Header.Get(subjects.HeaderRetry)
	if v == "" || len(v) > 20 {
		return 0
	}
	n, err := strconv.ParseUint(v, 10, 64)
	if err != nil {
		return 0
	}
	return n
}

func (p *Pipeline) newRun(d consumers.Msg, req subjects.TaskRequest) *taskRun {
	now := p.cfg.Now().UTC()
	return &taskRun{
		d:   d,
		req: req,
		st: subjects.TaskState{
			Workflow:  req.Workflow,
			Task:      req.ID,
			State:     subjects.StateRunning,
			Stage:     string(subjects.RolePlanner),
			Attempt:   1,
			Queue:     d.Queue,
			StreamSeq: d.StreamSeq,
			Delivery:  d.NumDelivered,
			Type:      req.Type,
			StartedAt: now,
			UpdatedAt: now,
		},
		traceparent: traceparentOf(d),
	}
}

// traceparentOf is the request's traceparent, read in any case (NATS
// headers are case-sensitive, and producers do not all write it in lower
// case), when it is a valid W3C traceparent; "" otherwise. A request's
// headers are untrusted: an invalid one is dropped, never carried to audit
// events, spans, the DLQ or runners, and never a reason to reject.
func traceparentOf(d consumers.Msg) string {
	if v := rawTraceparent(d); subjects.ValidTraceparent(v) {
		return v
	}
	return ""
}

func rawTraceparent(d consumers.Msg) string {
	if v := d.Header.Get(subjects.HeaderTraceparent); v != "" {
		return v
	}
	for k, v := range d.Header {
		if strings.EqualFold(k, subjects.HeaderTraceparent) && len(v) > 0 {
			return v[0]
		}
	}
	return ""
}

// nextState copies the committed state for a change.
func (t *taskRun) nextState() subjects.TaskState {
	next := t.st
	next.Outputs = maps.Clone(t.st.Outputs)
	next.Tries = maps.Clone(t.st.Tries)
	if next.Outputs == nil {
		next.Outputs = map[subjects.Role]string{}
	}
	return next
}

// backoff is the nak delay after a failed delivery n: RetryBase, doubled
// per delivery, at most RetryMax.
func (p *Pipeline) backoff(n uint64) time.Duration {
	return backoff.Policy{Base: p.cfg.RetryBase, Max: p.cfg.RetryMax}.DelayN(n)
}
