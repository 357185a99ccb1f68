package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"

	"github.com/droverhq/drover/subjects"
)

// Actions of the sim's planner and implementer results.
const (
	ActionPlan   = "plan"
	ActionChange = "change"
)

type simPlan struct {
	Plan  string   `json:"plan"`
	Steps []string `json:"steps"`
}

type simChange struct {
	Change    string `json:"change"`
	Attempt   int    `json:"attempt"`
	Addresses string `json:"addresses"`
}

type simVerdict struct {
	Verdict  string `json:"verdict"`
	Feedback string `json:"feedback"`
	// Diff is the diff stat the judge was shown, in a workspace.
	Diff string `json:"diff,omitempty"`
}

// simOutput is the sim's result for req: a pure function of the role, the
// task's id, scope, verification and type, the attempt, plan, change and
// feedback, the judge_rejects control and, in a workspace, the judge's diff.
// It never reads Try, the workflow or the clock.
func simOutput(req Request, ctl subjects.SimControls) (Result, error) {
	t := req.Task
	goal := t.Verification
	if goal == "" {
		goal = "the scope"
	}
	var (
		out       any
		action    string
		reasoning string
	)
	switch req.Role {
	case subjects.RolePlanner:
		out = simPlan{
			Plan: fmt.Sprintf("%s %s: %s", typeOf(t), t.ID, t.Scope),
			Steps: []string{
				"understand: " + t.Scope,
				"implement: " + t.Scope,
				"verify: " + goal,
			},
		}
		action, reasoning = ActionPlan, fmt.Sprintf("planned %s in 3 steps", t.ID)
	case subjects.RoleImplementer:
		change := fmt.Sprintf("attempt %d of %s following plan %s", req.Attempt, t.ID, digest(req.Plan))
		if req.Feedback != "" {
			change += " addressing feedback " + digest([]byte(req.Feedback))
		}
		out = simChange{Change: change, Attempt: req.Attempt, Addresses: req.Feedback}
		action, reasoning = ActionChange, change
	case subjects.RoleJudge:
		v := simVerdict{
			Verdict:  subjects.VerdictApprove,
			Feedback: fmt.Sprintf("attempt %d approved: %s shown by change %s", req.Attempt, goal, digest(req.Change)),
		}
		if req.Attempt <= ctl.JudgeRejects {
			v = simVerdict{
				Verdict:  subjects.VerdictReject,
				Feedback: fmt.Sprintf("attempt %d rejected: %s not yet shown", req.Attempt, goal),
			}
		}
		if w := req.Workspace; w != nil {
			// In a workspace the sim judges the diff it is shown: the
			// stat, and the patch by its digest.
			v.Diff = w.Stat
			v.Feedback += fmt.Sprintf(" (patch %s", digest([]byte(w.Patch)))
			if w.Empty {
				v.Feedback += ", no change since the previous attempt"
			}
			v.Feedback += ")"
		}
		out, action, reasoning = v, v.Verdict, v.Feedback
	default:
		return Result{}, Permanentf("sim: unknown role %q", req.Role)
	}
	return Result{Output: mustMarshal(out), Action: action, Reasoning: reasoning}, nil
}

func typeOf(t subjects.TaskRequest) string {
	if t.Type == "" {
		return subjects.DefaultTaskType
	}
	return t.Type
}

// digest is a short, stable fingerprint of b for output strings.
func digest(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:6])
}
