package audit

import (
	"sort"
	"strings"

	"github.com/droverhq/drover/subjects"
)

// Flags of a task's progress.
const (
	fRan      uint8 = 1 << iota // has an event other than task_rejected
	fAccepted                   // task_accepted seen
	fPlanned                    // planner_decision seen
	fImpl                       // implementer_change of the current round seen
	fApproved                   // an approving judge_verdict seen
	fReview                     // review_requested seen, not yet decided
	fReviewed                   // approved by a person
)

// idSeq is a packed event ID (type, actor, attempt, n) and its sequence.
type idSeq struct{ key, seq uint64 }

// maxIDList is how many event IDs a task keeps in a list before a map.
const maxIDList = 32

// taskState is what the checks remember of one task (or, for task "_", of a
// workflow's own events and its unreadable rejections): the IDs of its
// events and where it stands in the pipeline.
type taskState struct {
	ids     []idSeq
	idMap   map[uint64]uint64
	termSeq uint64
	round   uint64 // the round in progress, from 1 once planned
	flags   uint8
	term    uint8 // the terminal event type, 0 while open
}

// seen reports whether the packed event ID key was recorded before, and
// at which sequence; otherwise it records it at seq.
func (ts *taskState) seen(key, seq uint64) (bool, uint64) {
	if ts.idMap != nil {
		if s, ok := ts.idMap[key]; ok {
			return true, s
		}
		ts.idMap[key] = seq
		return false, 0
	}
	for _, p := range ts.ids {
		if p.key == key {
			return true, p.seq
		}
	}
	if len(ts.ids) < maxIDList {
		ts.ids = append(ts.ids, idSeq{key, seq})
		return false, 0
	}
	ts.idMap = make(map[uint64]uint64, 2*maxIDList)
	for _, p := range ts.ids {
		ts.idMap[p.key] = p.seq
	}
	ts.ids = nil
	ts.idMap[key] = seq
	return false, 0
}

// step checks that e may come next in its task and advances the task.
func (c *checker) step(ts *taskState, e *event) {
	name := typeRules[e.typ].et
	terminal := e.typ == tCompleted || e.typ == tFailed || e.typ == tCancelled
	if ts.term != 0 {
		rule := RuleAfterTerminal
		if terminal {
			rule = RuleTerminalTwice
		}
		c.violate(e, rule, "%s after the task's %s at seq %d", name, typeRules[ts.term].et, ts.termSeq)
		return
	}
	first := ts.flags&fRan == 0
	ts.flags |= fRan
	switch {
	case e.typ == tAccepted && !first:
		c.violate(e, RuleOrder, "task_accepted is not the task's first event")
	case e.typ != tAccepted && first:
		c.violate(e, RuleOrder, "%s is the task's first event; task_accepted must come first", name)
	case ts.flags&fApproved != 0 && !terminal && e.typ != tReviewRequested && e.typ != tReviewDecided &&
		(e.typ != tRetried || ts.flags&fReviewed == 0):
		// A task a person approved may retry its delivery (the push).
		c.violate(e, RuleOrder, "%s after the approving judge_verdict of round %d; only task_completed may follow", name, ts.round)
	}
	switch e.typ {
	case tAccepted:
		ts.flags |= fAccepted
	case tPlanner:
		if ts.flags&fPlanned != 0 || ts.round > 0 {
			c.violate(e, RuleOrder, "planner_decision after the task's planner_decision or implementer_change")
		}
		ts.flags |= fPlanned
		ts.round = max(ts.round, 1)
	case tImplementer:
		switch {
		case ts.flags&fPlanned == 0:
			c.violate(e, RuleOrder, "implementer_change before planner_decision")
		case e.attempt != ts.round:
			c.violate(e, RuleOrder, "implementer_change of round %d while the task is in round %d", e.attempt, ts.round)
		case ts.flags&fImpl != 0:
			c.violate(e, RuleOrder, "a second implementer_change in round %d", e.attempt)
		}
		ts.round, ts.flags = e.attempt, ts.flags|fImpl
	case tJudge:
		if ts.flags&fImpl == 0 || e.attempt != ts.round {
			c.violate(e, RuleOrder, "judge_verdict of round %d before the implementer_change of round %d", e.attempt, e.attempt)
		}
		switch e.action {
		case subjects.VerdictApprove:
			ts.round, ts.flags = e.attempt, ts.flags|fApproved
		case subjects.VerdictReject:
			ts.round, ts.flags = e.attempt+1, ts.flags&^fImpl
		default:
			c.violate(e, RuleOrder, "judge_verdict with action %q, neither %q nor %q", e.action, subjects.VerdictApprove, subjects.VerdictReject)
		}
	case tReviewRequested:
		// After the judge approved (after_judge), or instead of the judge.
		if ts.flags&fImpl == 0 || e.attempt != ts.round || ts.flags&fReview != 0 {
			c.violate(e, RuleOrder, "review_requested of round %d without the implementer_change of that round, or twice", e.attempt)
		}
		ts.flags |= fReview
	case tReviewDecided:
		if ts.flags&fReview == 0 || e.attempt != ts.round {
			c.violate(e, RuleOrder, "review_decided of round %d without its review_requested", e.attempt)
		}
		ts.flags &^= fReview
		switch e.action {
		case subjects.ReviewApprove:
			ts.flags |= fApproved | fReviewed
		case subjects.ReviewReject:
			ts.round, ts.flags = e.attempt+1, ts.flags&^(fImpl|fApproved)
		default:
			c.violate(e, RuleOrder, "review_decided with action %q, neither %q nor %q", e.action, subjects.ReviewApprove, subjects.ReviewReject)
		}
	case tRetried:
		c.checkRetried(ts, e)
	case tCompleted:
		if ts.flags&fApproved == 0 || ts.flags&fReview != 0 || e.attempt != ts.round {
			c.violate(e, RuleOrder, "task_completed of round %d without an approving judge_verdict (or review) of that round", e.attempt)
		}
	case tFailed:
		c.failures = append(c.failures, dlqNeed{seq: e.seq, id: e.id, subject: e.subject, wf: e.wf, task: e.task, reason: e.action, at: e.earliest()})
	}
	if terminal {
		ts.term, ts.termSeq = e.typ, e.seq
	}
}

// checkRetried checks that a task_retried names the role and round that
// were due: the planner before its decision, the implementer of the round
// in progress before its change, the judge after it.
func (c *checker) checkRetried(ts *taskState, e *event) {
	planned, impl := ts.flags&fPlanned != 0, ts.flags&fImpl != 0
	var ok bool
	switch e.actor {
	case "planner":
		ok = !planned && e.attempt == 1
	case "implementer":
		ok = planned && !impl && e.attempt == ts.round
	case "judge":
		ok = impl && e.attempt == ts.round
	}
	if !ok {
		stage := "planner"
		switch {
		case impl:
			stage = "judge"
		case planned:
			stage = "implementer"
		}
		c.violate(e, RuleOrder, "task_retried of the %s in round %d, but the task's next role is the %s of round %d",
			e.actor, e.attempt, stage, max(ts.round, 1))
	}
}

// finish counts the tasks by outcome.
func (c *checker) finish() {
	var open []string
	for key, ts := range c.tasks {
		if ts.flags&fRan == 0 || strings.HasSuffix(key, "."+subjects.Reserved) {
			continue
		}
		c.rep.Tasks++
		switch ts.term {
		case tCompleted:
			c.rep.Completed++
		case tFailed:
			c.rep.Failed++
		case tCancelled:
			c.rep.Cancelled++
		default:
			c.rep.Open++
			open = append(open, key)
		}
	}
	sort.Strings(open)
	for _, key := range open[:min(len(open), maxOpenListed)] {
		wf, task, _ := strings.Cut(key, ".")
		c.rep.OpenTasks = append(c.rep.OpenTasks, wf+"/"+task)
	}
}
