package replay

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync/atomic"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// ErrDiverged is the cause of a role the record cannot serve: the re-run
// asked for a step the original never took, or with other inputs (a
// counterfactual role decided differently). It is permanent: the task
// stops there, failed with reason role_failed, and the report shows where
// it left the record.
var ErrDiverged = errors.New("diverged from the record")

// errRecordedFailure is the cause of a step that failed in the original:
// the replay fails it the same way.
var errRecordedFailure = errors.New("recorded failure")

// Metadata keys a re-run's tasks carry (in the request's metadata, so the
// re-run's own record says what it is).
const (
	// MetaReplayOf names the workflow a replay re-runs.
	MetaReplayOf = "replay_of"
	// MetaCounterfactualOf names the workflow a counterfactual re-runs.
	MetaCounterfactualOf = "counterfactual_of"
	// MetaCounterfactualRole names the role a counterfactual runs again.
	MetaCounterfactualRole = "counterfactual_role"
)

// markers are the metadata keys a re-run adds; a live runner never sees
// them, so it gets exactly the request the original role had.
var markers = []string{MetaReplayOf, MetaCounterfactualOf, MetaCounterfactualRole}

// Recorded is a runner that serves every role from a workflow's record:
// given the role, the task and the round, it returns the recorded output,
// after checking that the inputs are the recorded ones (the plan, the
// change and the judge's feedback). It never calls a model.
type Recorded struct {
	rec *Record
	// served and diverged count the calls answered from the record and
	// the calls it could not answer.
	served, diverged atomic.Int64
}

// NewRecorded returns a runner serving rec.
func NewRecorded(rec *Record) *Recorded { return &Recorded{rec: rec} }

// Identity implements runner.Runner.
func (r *Recorded) Identity() string { return "record/" + r.rec.Workflow }

// RunsInline implements runner.Inline: a record is read in process.
func (r *Recorded) RunsInline() bool { return true }

// Served returns how many role calls the record answered.
func (r *Recorded) Served() int64 { return r.served.Load() }

// Diverged returns how many role calls the record could not answer.
func (r *Recorded) Diverged() int64 { return r.diverged.Load() }

// Run implements runner.Runner.
func (r *Recorded) Run(_ context.Context, req runner.Request) (runner.Result, error) {
	res, err := r.lookup(req)
	if errors.Is(err, ErrDiverged) {
		r.diverged.Add(1)
	} else if err == nil {
		r.served.Add(1)
	}
	return res, err
}

func (r *Recorded) lookup(req runner.Request) (runner.Result, error) {
	t := r.rec.Tasks[req.Task.ID]
	if t == nil {
		return runner.Result{}, runner.Permanentf("%w: task %s is not in the record of %s", ErrDiverged, req.Task.ID, r.rec.Workflow)
	}
	step := Step{Role: req.Role, Attempt: req.Attempt}
	if req.Role == subjects.RolePlanner {
		step.Attempt = 1
	}
	out, ok := t.Outputs[step]
	if !ok {
		return runner.Result{}, r.missing(t, req)
	}
	if err := r.checkInputs(t, req, out); err != nil {
		return runner.Result{}, runner.Permanentf("%w: task %s, %s of round %d: %v", ErrDiverged, req.Task.ID, req.Role, req.Attempt, err)
	}
	meta := map[string]any{"recorded_from": r.rec.Workflow}
	if req.Role == subjects.RoleImplementer && req.Workspace != nil {
		// The re-run's worktree gets the recorded change, as from a
		// cache hit, so its branch has the recorded tree.
		if ch := recordedChange(out.Metadata); ch != nil {
			meta[audit.MetaWorkspace] = pipeline.RecordedChange(ch)
		}
	}
	return runner.Result{Output: out.Output, Action: out.Action, Reasoning: out.Reasoning, Metadata: meta}, nil
}

// recordedChange returns the workspace change in a role event's metadata
// (nil: none).
func recordedChange(meta json.RawMessage) json.RawMessage {
	var m struct {
		Workspace json.RawMessage `json:"workspace"`
	}
	if len(meta) == 0 || json.Unmarshal(meta, &m) != nil || len(m.Workspace) == 0 || string(m.Workspace) == "null" {
		return nil
	}
	return m.Workspace
}

// missing explains a step with no recorded output: the step the original
// failed at fails again, the same way (permanently for role_failed, else
// as a retried error until the deliveries run out); any other is a
// divergence.
func (r *Recorded) missing(t *Task, req runner.Request) error {
	o := t.Outcome
	if o.Type == subjects.EventTaskFailed && failedStep(t) == (Step{Role: req.Role, Attempt: req.Attempt}) {
		switch subjects.Reason(o.Reason) {
		case subjects.ReasonRoleFailed:
			return runner.Permanentf("%w: %s", errRecordedFailure, o.Error)
		case subjects.ReasonMaxDeliveries:
			return fmt.Errorf("%w: %s", errRecordedFailure, o.Error)
		}
	}
	return runner.Permanentf("%w: task %s has no recorded %s output for round %d in %s", ErrDiverged, req.Task.ID, req.Role, req.Attempt, r.rec.Workflow)
}

// failedStep is the step a failed task stopped at: the first of its last
// round with no output.
func failedStep(t *Task) Step {
	if _, ok := t.Outputs[Step{subjects.RolePlanner, 1}]; !ok {
		return Step{subjects.RolePlanner, 1}
	}
	a := max(t.Outcome.Attempts, 1)
	if _, ok := t.Outputs[Step{subjects.RoleImplementer, a}]; !ok {
		return Step{subjects.RoleImplementer, a}
	}
	return Step{subjects.RoleJudge, a}
}

// checkInputs compares the request's inputs with the recorded ones.
func (r *Recorded) checkInputs(t *Task, req runner.Request, out Output) error {
	if req.Role == subjects.RolePlanner {
		return nil
	}
	if plan := t.Outputs[Step{subjects.RolePlanner, 1}]; !sameJSON(plan.Output, req.Plan) {
		return errors.New("the plan differs from the recorded one")
	}
	switch req.Role {
	case subjects.RoleImplementer:
		if req.Feedback != out.Feedback {
			return errors.New("the judge's feedback differs from the recorded one")
		}
	case subjects.RoleJudge:
		if change := t.Outputs[Step{subjects.RoleImplementer, req.Attempt}]; !sameJSON(change.Output, req.Change) {
			return errors.New("the change differs from the recorded one")
		}
	}
	return nil
}

// Live wraps the runner a counterfactual runs again: it counts its calls
// and hands it the request without the re-run's markers, so it sees
// exactly the inputs the original role had.
type Live struct {
	runner.Runner
	calls atomic.Int64
}

// NewLive wraps r.
func NewLive(r runner.Runner) *Live { return &Live{Runner: r} }

// Calls returns how many times the live runner ran.
func (l *Live) Calls() int64 { return l.calls.Load() }

// Run implements runner.Runner.
func (l *Live) Run(ctx context.Context, req runner.Request) (runner.Result, error) {
	l.calls.Add(1)
	req.Task = unmarked(req.Task)
	return l.Runner.Run(ctx, req)
}

// UsesLessons passes the wrapped runner's answer on (runner.LessonReader).
func (l *Live) UsesLessons() bool {
	lr, ok := l.Runner.(runner.LessonReader)
	return ok && lr.UsesLessons()
}

// unmarked returns t without the re-run's metadata keys.
func unmarked(t subjects.TaskRequest) subjects.TaskRequest {
	if len(t.Metadata) == 0 {
		return t
	}
	md := maps.Clone(t.Metadata)
	for _, k := range markers {
		delete(md, k)
	}
	if len(md) == 0 {
		md = nil
	}
	t.Metadata = md
	return t
}

// marked returns the original request as the re-run submits it: under
// workflow as, with the re-run's markers in its metadata, and without the
// original's branch, so a re-run's workspace gets a branch of its own.
func marked(req subjects.TaskRequest, as string, marks map[string]string) subjects.TaskRequest {
	md := maps.Clone(req.Metadata)
	if md == nil {
		md = map[string]json.RawMessage{}
	}
	for k, v := range marks {
		md[k], _ = json.Marshal(v)
	}
	req.Workflow, req.Metadata, req.Branch = as, md, ""
	return req
}
