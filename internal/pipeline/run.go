package pipeline

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// roleResult is one role's result within a delivery.
type roleResult struct {
	role    subjects.Role
	attempt int
	res     runner.Result   // with the full output, for the next role
	stored  json.RawMessage // the output as events and the cache hold it
	key     string
	cached  bool
	dur     time.Duration
	input   json.RawMessage // the role event's input (roleInput)
	cost    ledger.Cost     // with a ledger only
}

// run executes the task's remaining roles from its stage.
func (p *Pipeline) run(ctx context.Context, t *taskRun) consumers.Outcome {
	if try := tryOf(t.st.TryBase, t.d.NumDelivered); try > uint64(p.cfg.MaxDeliver) {
		return p.fail(ctx, t, t.st.Attempt, subjects.ReasonMaxDeliveries,
			fmt.Sprintf("delivery %d exceeds the limit of %d: the worker running the last allowed delivery stopped", try, p.cfg.MaxDeliver), nil, nil)
	}
	for {
		if out, stop := p.gate(ctx, t, nil, nil); stop {
			return out
		}
		switch subjects.Role(t.st.Stage) {
		case subjects.RolePlanner:
			if out, done := p.planStage(ctx, t); done {
				return out
			}
		case subjects.RoleImplementer, subjects.RoleJudge:
			out, done := p.roundStage(ctx, t)
			if done && out.Action == consumers.Abandon && errors.Is(out.Err, errCreateConflict) {
				// The state appeared under a deferred plan (deferPlan): a
				// concurrent request for the task, or a redelivery.
				if out, done = p.reclaim(ctx, t); !done {
					continue
				}
			}
			if done {
				return out
			}
		case StageDeliver:
			return p.deliverStage(ctx, t)
		default:
			return p.nakOutcome(p.taskLog(t, ""), t.d, fmt.Errorf("task %s/%s has unknown stage %q", t.req.Workflow, t.req.ID, t.st.Stage))
		}
	}
}

func (p *Pipeline) planStage(ctx context.Context, t *taskRun) (consumers.Outcome, bool) {
	rr, err := p.role(ctx, t, runner.Request{Role: subjects.RolePlanner, Task: t.req, Attempt: 1, Lessons: p.plannerLessons(ctx, t)})
	if err != nil {
		return p.roleFailed(ctx, t, subjects.RolePlanner, 1, err, rr.dur, nil, nil), true
	}
	t.plan = rr.res.Output
	planned := func(s *subjects.TaskState) {
		s.Stage = string(subjects.RoleImplementer)
		s.Outputs[subjects.RolePlanner] = rr.key
	}
	if p.deferPlan(t, rr) {
		// Nothing ran: the plan rides on the task's next write, which
		// creates the state with it (task_accepted, then planner_decision,
		// then that write's events). A crash before it costs a cache read.
		t.st = t.nextState()
		planned(&t.st)
		t.deferred = append(t.deferred, p.roleEvent(t, rr))
		return consumers.Outcome{}, false
	}
	err = p.commitAhead(ctx, t, planned, p.roleEvent(t, rr))
	if errors.Is(err, errCreateConflict) {
		return p.reclaim(ctx, t)
	}
	if err != nil {
		return p.errOutcome(t, err), true
	}
	return consumers.Outcome{}, false
}

// deferPlan reports whether a planner result goes without a write of its
// own: a cache hit on a first delivery whose state does not exist yet (so
// no outbox is in flight either), workspaces off (with them, the first
// write pins the task's workspace). A fully cached task then makes one
// state write, not two.
func (p *Pipeline) deferPlan(t *taskRun, rr roleResult) bool {
	return rr.cached && t.rev == 0 && p.d.Workspaces == nil
}

// roundStage runs one implementer+judge round (or its judge half). An
// implementer that ran (a runner call was paid for) is recorded before the
// judge starts: its event, with its change, and the task's state at the
// judge's stage, so a crash at any instant after it returned never runs it
// again, whether or not its result is cached. A cached implementer costs
// nothing to run again, so its event rides on the verdict's write.
func (p *Pipeline) roundStage(ctx context.Context, t *taskRun) (consumers.Outcome, bool) {
	round := t.st.Attempt
	plan, err := p.output(ctx, t, subjects.RolePlanner, t.plan)
	if err != nil {
		return p.nakOutcome(p.taskLog(t, ""), t.d, err), true
	}
	t.plan = plan // read once per delivery, not once per round
	if err := p.openWorkspace(ctx, t); err != nil {
		role := subjects.Role(t.st.Stage)
		return p.roleFailed(ctx, t, role, round, roleErr(role, err), 0, nil, nil), true
	}
	var (
		change  json.RawMessage
		pending []subjects.OutboxItem
		keep    func(*subjects.TaskState) // what the round has not committed yet
	)
	if subjects.Role(t.st.Stage) == subjects.RoleImplementer {
		req := runner.Request{Role: subjects.RoleImplementer, Task: t.req, Attempt: round, Plan: plan, Feedback: t.st.Feedback}
		t.implementerWorkspace(&req)
		p.resumeSession(ctx, t, &req)
		rr, err := p.role(ctx, t, req)
		if err != nil {
			return p.roleFailed(ctx, t, subjects.RoleImplementer, round, err, rr.dur, nil, nil), true
		}
		t.session = sessionOf(rr.res.Metadata)
		change = rr.res.Output
		pending = append(pending, p.roleEvent(t, rr))
		keep = t.keepChange(round, rr.key)
		if !rr.cached {
			if err := p.commitAhead(ctx, t, keep, pending...); err != nil {
				return p.errOutcome(t, err), true
			}
			pending, keep = nil, nil
		}
	} else if change, err = p.output(ctx, t, subjects.RoleImplementer, nil); err != nil {
		return p.nakOutcome(p.taskLog(t, ""), t.d, err), true
	}
	if out, stop := p.gate(ctx, t, pending, keep); stop {
		return out, true
	}
	if p.reviewMode(t) == subjects.ReviewInstead {
		// A person is the judge: the judge role does not run.
		return p.requestReview(ctx, t, round, nil, pending, keep), true
	}
	jreq := runner.Request{Role: subjects.RoleJudge, Task: t.req, Attempt: round, Plan: plan, Change: change}
	t.judgeWorkspace(&jreq)
	rr, err := p.role(ctx, t, jreq)
	if err == nil && rr.res.Action != subjects.VerdictApprove && rr.res.Action != subjects.VerdictReject {
		err = fmt.Errorf("judge: verdict %q is neither %q nor %q", rr.res.Action, subjects.VerdictApprove, subjects.VerdictReject)
	}
	if err != nil {
		return p.roleFailed(ctx, t, subjects.RoleJudge, round, err, rr.dur, pending, keep), true
	}
	items := append(pending, p.roleEvent(t, rr))
	setOutputs := func(s *subjects.TaskState) {
		if keep != nil {
			keep(s)
		}
		s.Outputs[subjects.RoleJudge] = rr.key
	}
	switch {
	case rr.res.Action == subjects.VerdictApprove && p.reviewMode(t) == subjects.ReviewAfterJudge:
		return p.requestReview(ctx, t, round, rr.stored, items, setOutputs), true
	case rr.res.Action == subjects.VerdictApprove:
		return p.deliverApproved(ctx, t, approved{attempt: round, change: change, verdict: rr.res.Output,
			retryItems: pending, retryKeep: keep}, items, setOutputs), true
	case round >= t.req.MaxAttempts:
		p.learn(ctx, t, subjects.RoleJudge, round, "rejected", fmt.Sprintf("the judge rejected attempt %d, the last allowed", round), rr.res.Reasoning, subjects.EventJudgeVerdict)
		return p.fail(ctx, t, round, subjects.ReasonMaxAttempts,
			fmt.Sprintf("judge rejected all %d attempts; last feedback: %s", round, rr.res.Reasoning), items, setOutputs), true
	default:
		err = p.commitAhead(ctx, t, func(s *subjects.TaskState) {
			setOutputs(s)
			s.Stage, s.Attempt, s.Feedback = string(subjects.RoleImplementer), round+1, rr.res.Reasoning
		}, items...)
		if err != nil {
			return p.errOutcome(t, err), true
		}
		p.learn(ctx, t, subjects.RoleJudge, round, "rejected", fmt.Sprintf("the judge rejected attempt %d", round), rr.res.Reasoning, subjects.EventJudgeVerdict)
		return consumers.Outcome{}, false
	}
}

// keepChange records an implementer result in the state: the judge's
// stage next, the result's cache key and, in a workspace, the attempt's
// recorded change.
func (t *taskRun) keepChange(round int, implKey string) func(*subjects.TaskState) {
	var record *subjects.WorkspaceAttempt
	if t.ws != nil {
		rec := t.attemptRecord(round)
		record = &rec
	}
	return func(s *subjects.TaskState) {
		s.Stage = string(subjects.RoleJudge)
		s.Outputs[subjects.RoleImplementer] = implKey
		if record != nil {
			w := s.Workspace
			if w == nil {
				w = t.pinned()
			}
			s.Workspace = withAttempt(w, *record)
		}
	}
}

// roleErr names the role an error of its setup belongs to, as the
// contract's error texts start: "implementer: workspace: ...".
func roleErr(role subjects.Role, err error) error {
	return fmt.Errorf("%s: %w", role, err)
}

// role runs one role through the cache, in its own span: a hit costs no
// runner call. A role the runner set marks NoCache skips the cache both
// ways. The runner gets the span's context as its traceparent (the
// request's own when nothing is traced).
func (p *Pipeline) role(ctx context.Context, t *taskRun, req runner.Request) (rr roleResult, err error) {
	i := roleIndex(req.Role)
	req.Try = t.st.Tries[req.Role] + 1
	ctx, span := p.d.Tracer.StartRole(ctx, req.Role)
	span.SetString(AttrRole, string(req.Role))
	span.SetInt(AttrAttempt, int64(req.Attempt))
	span.SetInt(AttrTry, int64(req.Try))
	span.SetString(AttrRunner, p.kinds[i])
	defer func() {
		span.SetBool(AttrCached, rr.cached)
		span.SetError(err)
		span.End()
	}()
	if req.TraceParent = span.TraceParent(); req.TraceParent == "" {
		req.TraceParent = t.traceparent
	}
	key := p.d.Cache.Key(p.ids[i], req) // cache.Key under the configured scope
	rr = roleResult{role: req.Role, attempt: req.Attempt, key: key, input: roleInput(req.Attempt, key, req.Feedback)}
	if res, ok := p.cacheGet(ctx, i, key); ok {
		full, err := p.expand(ctx, res.Output)
		if err == nil && req.Role == subjects.RoleImplementer && t.ws != nil {
			// A hit replays its change in the fresh worktree; one that no
			// longer applies is a miss, never a wrong result.
			if err = p.applyCached(ctx, t, req.Attempt, &res); err != nil && !errors.Is(err, ErrPatchDoesNotApply) {
				return rr, fmt.Errorf("%s: workspace: %w", req.Role, err)
			}
		}
		if err == nil {
			rr.res, rr.stored, rr.cached = res, res.Output, true
			rr.res.Output = full
			p.price(ctx, req, &rr)
			p.d.Metrics.RoleDone(req.Role, p.ids[i], true, 0, nil)
			return rr, nil
		}
		p.taskLog(t, req.Role).Warn("cached result cannot be used (a missing blob, or a change that no longer applies); running the role", "key", key, "err", err)
	}
	if t.d.Stale != nil && t.d.Stale() {
		return rr, fmt.Errorf("%s: not started: %w", req.Role, consumers.ErrClaimLost)
	}
	if t.flushLost() {
		return rr, fmt.Errorf("%s: not started: the last commit's events found the task taken over: %w", req.Role, consumers.ErrClaimLost)
	}
	if err := p.admit(ctx, req); err != nil {
		return rr, err
	}
	start := time.Now()
	p.observeStart(t, req, start)
	live := p.startLive(t, req)
	req.Activity = live.activity()
	res, err := p.runners[i].Run(ctx, req)
	live.close()
	rr.dur = time.Since(start)
	t.runnerEnded = start.Add(rr.dur)
	if err == nil && !json.Valid(res.Output) {
		err = fmt.Errorf("%s: output is not valid JSON (%d bytes)", req.Role, len(res.Output))
	}
	if err == nil && !utf8.Valid(res.Output) {
		// Valid JSON holds bytes that are not UTF-8 only inside its
		// strings, where an agent's raw output may put them. The record is
		// read forever, by consumers that require UTF-8: each such run of
		// bytes is recorded as one U+FFFD.
		res.Output = bytes.ToValidUTF8(res.Output, []byte("\uFFFD"))
	}
	p.d.Metrics.RoleDone(req.Role, p.ids[i], false, rr.dur, err)
	if err != nil {
		return rr, fmt.Errorf("%s: %w", req.Role, err)
	}
	if req.Role == subjects.RoleImplementer && t.ws != nil {
		if err := p.keepWork(ctx, t, req.Attempt, &res); err != nil {
			return rr, fmt.Errorf("%s: workspace: %w", req.Role, err)
		}
		p.keepSession(ctx, t, &res)
	}
	rr.res = res
	p.price(ctx, req, &rr)
	if rr.stored, err = p.shrink(ctx, res.Output); err != nil {
		return rr, fmt.Errorf("%s: output: %w", req.Role, err)
	}
	stored := res
	stored.Output = rr.stored
	// The put does not hold up the next role; the next commit waits for it
	// before publishing its events, so a result is in the cache before an
	// event says its role is done.
	if !p.cached[i] {
		return rr, nil
	}
	if f, err := p.d.Cache.PutAsync(p.d.JS, key, stored); err != nil {
		p.taskLog(t, req.Role).Warn("cache put failed", "key", key, "err", err)
		p.d.Metrics.CachePutFailed()
	} else {
		t.puts = append(t.puts, pendingPut{key: key, f: f})
	}
	return rr, nil
}

// cacheGet looks key up in the cache, unless role i is not cached: a
// side-effecting role runs every time.
func (p *Pipeline) cacheGet(ctx context.Context, i int, key string) (runner.Result, bool) {
	if !p.cached[i] {
		return runner.Result{}, false
	}
	return p.d.Cache.Get(ctx, key)
}

// pendingPut is a cache write in flight.
type pendingPut struct {
	key string
	f   jetstream.PubAckFuture
}

// settlePuts waits for the task's cache writes in flight. A failed write
// only costs a future miss: it is counted and logged, never fatal.
//
// The wait is bounded: a reply lost with a server that died must not hold
// the task (and its heartbeats) forever. The bound's timer is started only
// for a write still in flight: the writes went out before the state write
// whose reply the task has just had, so they have usually been confirmed.
func (p *Pipeline) settlePuts(ctx context.Context, t *taskRun) {
	if len(t.puts) == 0 {
		return
	}
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
		t.puts = t.puts[:0]
	}()
	for _, pp := range t.puts {
		select {
		case <-pp.f.Ok():
			continue
		case err := <-pp.f.Err():
			p.putFailed(t, pp.key, err)
			continue
		default:
		}
		if timer == nil {
			timer = time.NewTimer(putSettleTimeout)
		}
		select {
		case <-pp.f.Ok():
		case err := <-pp.f.Err():
			p.putFailed(t, pp.key, err)
		case <-timer.C:
			p.taskLog(t, "").Warn("cache put unconfirmed; going on without it", "key", pp.key, "after", putSettleTimeout)
			p.d.Metrics.CachePutFailed()
			return
		case <-ctx.Done():
			return
		}
	}
}

// putFailed counts and logs a cache write that failed: it only costs a
// future miss.
func (p *Pipeline) putFailed(t *taskRun, key string, err error) {
	p.taskLog(t, "").Warn("cache put failed", "key", key, "err", err)
	p.d.Metrics.CachePutFailed()
}

// putSettleTimeout bounds the wait for a task's cache writes.
const putSettleTimeout = 10 * time.Second

// output returns a finished role's full output: from memory, else the
// cache, else the role's audit event, which never expires.
func (p *Pipeline) output(ctx context.Context, t *taskRun, role subjects.Role, known json.RawMessage) (json.RawMessage, error) {
	if known != nil {
		return known, nil
	}
	if key := t.st.Outputs[role]; key != "" {
		if res, ok := p.d.Cache.Get(ctx, key); ok {
			return p.expand(ctx, res.Output)
		}
	}
	subj := p.d.Names.AuditSubject(t.req.Workflow, t.req.ID, subjects.ActorOf(role), subjects.RoleEvent(role))
	m, err := p.d.Audit.GetLastMsgForSubject(ctx, subj)
	if err != nil {
		return nil, fmt.Errorf("%s output of %s/%s: not in the cache and not in the audit stream: %w", role, t.req.Workflow, t.req.ID, err)
	}
	var ev subjects.AuditEvent
	if err := json.Unmarshal(m.Data, &ev); err != nil {
		return nil, fmt.Errorf("%s output of %s/%s: audit event %d: %w", role, t.req.Workflow, t.req.ID, m.Sequence, err)
	}
	return p.expand(ctx, ev.Output)
}

func (p *Pipeline) expand(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if p.d.Blobs == nil {
		return raw, nil
	}
	return p.d.Blobs.Expand(ctx, raw)
}

// reclaim decides the claim again after the state appeared under a
// first delivery (a concurrent request for the same task, or a redelivery).
func (p *Pipeline) reclaim(ctx context.Context, t *taskRun) (consumers.Outcome, bool) {
	nt, out, ok := p.claim(ctx, t.d, t.req)
	if !ok {
		return out, true
	}
	nt.plan, nt.puts = t.plan, t.puts
	if nt.st.Workspace != nil && t.wsPin != nil {
		// The state that appeared pins its own workspace: the worktree
		// opened on this delivery's unpinned base is not the task's.
		p.releaseWorkspace(ctx, t, consumers.Outcome{})
	} else {
		nt.wsPin, nt.ws, nt.change = t.wsPin, t.ws, t.change
	}
	*t = *nt
	return consumers.Outcome{}, false
}
