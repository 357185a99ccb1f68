package pipeline

import (
	"fmt"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/subjects"
)

// reviewRank orders the review modes by how much stands between an agent's
// change and its delivery: off (the judge alone), instead (a person
// alone), after_judge (the judge, then a person).
func reviewRank(mode string) int {
	switch mode {
	case subjects.ReviewInstead:
		return 1
	case subjects.ReviewAfterJudge:
		return 2
	}
	return 0
}

// admitRequest checks a new task's request against this worker's policy before
// anything of it runs or is written: its review may raise the queue's
// review mode, never lower it, and its own branch must pass the
// workspaces' branch policy. A refusal is invalid_value, naming the field.
func (p *Pipeline) admitRequest(d consumers.Msg, req subjects.TaskRequest) *subjects.RejectError {
	refuse := func(format string, a ...any) *subjects.RejectError {
		return &subjects.RejectError{Reason: subjects.ReasonInvalidValue, Workflow: req.Workflow, Task: req.ID, Msg: fmt.Sprintf(format, a...)}
	}
	if req.Review != "" {
		if floor := p.cfg.Review.ModeFor(d.Queue, ""); reviewRank(req.Review) < reviewRank(floor) {
			return refuse("review %q is below queue %s's review mode %q: a request may raise the review level (off < instead < after_judge), never lower it",
				req.Review, d.Queue, floor)
		}
	}
	if req.Branch != "" && p.d.Workspaces != nil {
		if err := p.d.Workspaces.CheckBranch(req.Branch); err != nil {
			return refuse("branch: %v", err)
		}
	}
	return nil
}
