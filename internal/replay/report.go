package replay

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

// Report compares a re-run with the record it re-ran.
type Report struct {
	Source string        `json:"source"`
	As     string        `json:"as"`
	Role   subjects.Role `json:"role,omitempty"`
	Tasks  []TaskReport  `json:"tasks"`
	// Served counts role calls answered from the record, Diverged those it
	// could not answer and LiveCalls the counterfactual runner's calls (a
	// replay makes none).
	Served    int64         `json:"served_from_record"`
	Diverged  int64         `json:"diverged"`
	LiveCalls int64         `json:"runner_calls"`
	Elapsed   time.Duration `json:"elapsed_ns"`
	Summary   Summary       `json:"summary"`
}

// TaskReport is one task's comparison.
type TaskReport struct {
	Task string  `json:"task"`
	Old  Outcome `json:"old"`
	New  Outcome `json:"new"`
	// OutcomeMatch: same terminal event and reason; AttemptsMatch: same
	// rounds; OutputsMatch: every role's output and the result are equal.
	OutcomeMatch  bool `json:"outcome_match"`
	AttemptsMatch bool `json:"attempts_match"`
	OutputsMatch  bool `json:"outputs_match"`
	// Changes compares, per implementer attempt of the record, the
	// workspace change the re-run's attempt made with the recorded one
	// (tasks recorded with workspaces only); ChangesMatch is set when
	// every one is the same tree.
	Changes      []ChangeMatch `json:"workspace_changes,omitempty"`
	ChangesMatch bool          `json:"workspace_match"`
	// OldDecision and NewDecision are the counterfactual role's decisions,
	// one per round each run reached ("reject,approve"; for a planner or
	// implementer, its action), and OldOutput and NewOutput its first
	// output that differs in a round both reached (else its first output).
	OldDecision string          `json:"old_decision,omitempty"`
	NewDecision string          `json:"new_decision,omitempty"`
	OldOutput   json.RawMessage `json:"old_output,omitempty"`
	NewOutput   json.RawMessage `json:"new_output,omitempty"`
	// Changed: the counterfactual role decided or produced otherwise.
	Changed bool `json:"changed"`
}

// Summary sums up a report.
type Summary struct {
	Tasks    int `json:"tasks"`
	Matching int `json:"matching"`
	// Compared and Agreed count the rounds both runs judged, and those
	// they judged alike (judge counterfactuals).
	Compared        int      `json:"compared,omitempty"`
	Agreed          int      `json:"agreed,omitempty"`
	AgreementRate   float64  `json:"agreement_rate,omitempty"`
	ApproveToReject []string `json:"approve_to_reject,omitempty"`
	RejectToApprove []string `json:"reject_to_approve,omitempty"`
	// Changed lists the tasks whose counterfactual role's output changed.
	Changed []string `json:"changed,omitempty"`
}

// compare builds the report of the re-run again of the tasks ids of rec.
func compare(rec, again *Record, ids []string, role subjects.Role) *Report {
	rep := &Report{Source: rec.Workflow, As: again.Workflow, Role: role}
	for _, id := range ids {
		old := rec.Tasks[id]
		nt := again.Tasks[id]
		if nt == nil {
			nt = &Task{Outputs: map[Step]Output{}}
		}
		tr := TaskReport{Task: id, Old: brief(old.Outcome), New: brief(nt.Outcome)}
		tr.OutcomeMatch = old.Outcome.Type == nt.Outcome.Type && old.Outcome.Reason == nt.Outcome.Reason
		tr.AttemptsMatch = old.Outcome.Attempts == nt.Outcome.Attempts
		tr.OutputsMatch = sameOutputs(old, nt)
		tr.Changes, tr.ChangesMatch = compareChanges(old, nt)
		if tr.OutcomeMatch && tr.AttemptsMatch && tr.OutputsMatch && tr.ChangesMatch {
			rep.Summary.Matching++
		}
		if role != "" {
			rep.Summary.decide(&tr, old, nt, role)
		}
		rep.Tasks = append(rep.Tasks, tr)
	}
	rep.Summary.Tasks = len(rep.Tasks)
	if rep.Summary.Compared > 0 {
		rep.Summary.AgreementRate = float64(rep.Summary.Agreed) / float64(rep.Summary.Compared)
	}
	return rep
}

// brief is an outcome without its output, for the report.
func brief(o Outcome) Outcome {
	o.Output = nil
	return o
}

// sameOutputs reports whether both runs have the same role outputs and
// the same result.
func sameOutputs(a, b *Task) bool {
	if len(a.Outputs) != len(b.Outputs) || !sameJSON(orEmpty(resultOf(a.Outcome.Output)), orEmpty(resultOf(b.Outcome.Output))) {
		return false
	}
	for s, o := range a.Outputs {
		n, ok := b.Outputs[s]
		if !ok || n.Action != o.Action || !sameJSON(o.Output, n.Output) {
			return false
		}
	}
	return true
}

func orEmpty(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return json.RawMessage("{}")
	}
	return raw
}

// decide compares the counterfactual role's steps of one task.
func (s *Summary) decide(tr *TaskReport, old, nt *Task, role subjects.Role) {
	for a := 1; ; a++ {
		st := Step{Role: role, Attempt: a}
		o, ok1 := old.Outputs[st]
		n, ok2 := nt.Outputs[st]
		if !ok1 || !ok2 {
			if ok1 != ok2 {
				tr.Changed = true
			}
			break
		}
		differs := o.Action != n.Action || !sameJSON(o.Output, n.Output)
		if tr.OldOutput == nil || differs && !tr.Changed {
			tr.OldOutput, tr.NewOutput = o.Output, n.Output
		}
		if role == subjects.RoleJudge {
			s.Compared++
			switch {
			case o.Action == n.Action:
				s.Agreed++
			case o.Action == subjects.VerdictApprove && !slices.Contains(s.ApproveToReject, tr.Task):
				s.ApproveToReject = append(s.ApproveToReject, tr.Task)
			case n.Action == subjects.VerdictApprove && !slices.Contains(s.RejectToApprove, tr.Task):
				s.RejectToApprove = append(s.RejectToApprove, tr.Task)
			}
			differs = o.Action != n.Action
		}
		tr.Changed = tr.Changed || differs
		if role == subjects.RolePlanner {
			break
		}
	}
	tr.OldDecision, tr.NewDecision = strings.Join(decisions(old, role), ","), strings.Join(decisions(nt, role), ",")
	if tr.Changed {
		s.Changed = append(s.Changed, tr.Task)
	}
}

// decisions lists a role's actions, round by round.
func decisions(t *Task, role subjects.Role) []string {
	var out []string
	for a := 1; ; a++ {
		o, ok := t.Outputs[Step{Role: role, Attempt: a}]
		if !ok {
			return out
		}
		out = append(out, o.Action)
	}
}

// WriteTable prints the report: one row per task, then the summary.
func (r *Report) WriteTable(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	if r.Role == "" {
		fmt.Fprintln(tw, "TASK\tOLD\tNEW\tOUTCOME\tATTEMPTS\tOUTPUTS\tWORKSPACE")
		for _, t := range r.Tasks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\n", redact.Terminal(t.Task), outcomeText(t.Old), outcomeText(t.New),
				same(t.OutcomeMatch), same(t.AttemptsMatch), same(t.OutputsMatch), changesText(t))
		}
	} else {
		fmt.Fprintf(tw, "TASK\tOLD %s\tNEW %s\tCHANGED\tOLD OUTCOME\tNEW OUTCOME\n", strings.ToUpper(string(r.Role)), strings.ToUpper(string(r.Role)))
		for _, t := range r.Tasks {
			fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", redact.Terminal(t.Task), dash(t.OldDecision), dash(t.NewDecision),
				yes(t.Changed), outcomeText(t.Old), outcomeText(t.New))
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	s := r.Summary
	what := "replay"
	if r.Role != "" {
		what = "counterfactual (" + string(r.Role) + ")"
	}
	fmt.Fprintf(w, "\n%s of %s as %s: %d tasks in %s (%.1f tasks/s)\n", what, redact.Terminal(r.Source), redact.Terminal(r.As),
		s.Tasks, r.Elapsed.Round(time.Millisecond), float64(s.Tasks)/max(r.Elapsed.Seconds(), 1e-9))
	fmt.Fprintf(w, "matching the record: %d of %d; runner calls: %d; served from the record: %d; diverged: %d\n",
		s.Matching, s.Tasks, r.LiveCalls, r.Served, r.Diverged)
	switch r.Role {
	case "":
	case subjects.RoleJudge:
		fmt.Fprintf(w, "verdicts compared: %d, agreed: %d (%.1f%%); approve -> reject: %d; reject -> approve: %d\n",
			s.Compared, s.Agreed, 100*s.AgreementRate, len(s.ApproveToReject), len(s.RejectToApprove))
		if len(s.ApproveToReject) > 0 {
			fmt.Fprintf(w, "approve -> reject: %s\n", redact.Terminal(strings.Join(s.ApproveToReject, " ")))
		}
		if len(s.RejectToApprove) > 0 {
			fmt.Fprintf(w, "reject -> approve: %s\n", redact.Terminal(strings.Join(s.RejectToApprove, " ")))
		}
	default:
		fmt.Fprintf(w, "%s output changed: %d of %d\n", r.Role, len(s.Changed), s.Tasks)
		if len(s.Changed) > 0 {
			fmt.Fprintf(w, "changed: %s\n", redact.Terminal(strings.Join(s.Changed, " ")))
		}
	}
	return nil
}

func outcomeText(o Outcome) string {
	if o.Type == "" {
		return "-"
	}
	s := strings.TrimPrefix(string(o.Type), "task_")
	if o.Reason != "" {
		s += "(" + o.Reason + ")"
	}
	return fmt.Sprintf("%s@%d", s, o.Attempts)
}

func same(ok bool) string {
	if ok {
		return "same"
	}
	return "DIFFERENT"
}

func yes(ok bool) string {
	if ok {
		return "yes"
	}
	return "no"
}

func dash(s string) string {
	if s == "" {
		return "-"
	}
	return redact.Terminal(s)
}
