package worker

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/droverhq/drover/internal/forge"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/subjects"
)

// pullRequests is the Deliverer of delivery pull_request: it opens (or,
// for a redelivered task, updates) the pull request of each approved,
// pushed branch. A request the forge refuses (422, 401, 403) fails only
// its task with pr_failed; a forge that is down or rate-limited past the
// client's tries is retried like a role error.
type pullRequests struct {
	c *forge.Client
	// base is the branch requests are opened against.
	base string
}

// newPullRequests delivers through c, against its configured base, else
// the workspace's base ref (a branch).
func newPullRequests(c *forge.Client, baseRef string) *pullRequests {
	return &pullRequests{c: c, base: baseOf(c.Config().Base, baseRef)}
}

// baseOf is the configured base, else the workspace's base ref as a branch
// name ("" when neither says: the task then fails with pr_failed).
func baseOf(configured, baseRef string) string {
	if configured != "" {
		return configured
	}
	return strings.TrimPrefix(baseRef, "refs/heads/")
}

// Deliver implements pipeline.Deliverer.
func (p *pullRequests) Deliver(ctx context.Context, d pipeline.DeliveryRequest) (pipeline.DeliveryResult, error) {
	if d.Workspace == nil || !d.Workspace.Pushed {
		return pipeline.DeliveryResult{}, &pipeline.DeliveryError{Reason: subjects.ReasonPRFailed,
			Err: errors.New("pull_request: the branch was not pushed (delivery pull_request needs workspace.push)")}
	}
	if p.base == "" {
		return pipeline.DeliveryResult{}, &pipeline.DeliveryError{Reason: subjects.ReasonPRFailed,
			Err: errors.New("pull_request: no base branch (set pull_request.base or workspace.base_ref)")}
	}
	task := forge.Task{
		Workflow: d.Workflow, ID: d.Task, Scope: d.Request.Scope,
		Plan: planText(d.Plan), Verdict: jsonText(d.Verdict), Review: reviewText(d.Review), Attempts: d.Attempt,
	}
	if d.Verdict == nil {
		task.Verdict = "(a person judged instead of the judge)"
	}
	pr, err := p.c.Open(ctx, forge.Request{Branch: d.Workspace.Branch, Base: p.base, Title: forge.Title(task), Body: forge.Body(task)})
	switch {
	case errors.Is(err, forge.ErrPermanent):
		return pipeline.DeliveryResult{}, &pipeline.DeliveryError{Reason: subjects.ReasonPRFailed, Err: err}
	case err != nil:
		return pipeline.DeliveryResult{}, err
	}
	return pipeline.Delivered(map[string]any{"pull_request": pr}), nil
}

// planText is the planner's plan as text: its plan and numbered steps
// when it has that shape, else its JSON.
func planText(raw json.RawMessage) string {
	var p struct {
		Plan  string   `json:"plan"`
		Steps []string `json:"steps"`
	}
	if json.Unmarshal(raw, &p) != nil || p.Plan == "" {
		return jsonText(raw)
	}
	var b strings.Builder
	b.WriteString(p.Plan)
	for i, s := range p.Steps {
		fmt.Fprintf(&b, "\n%d. %s", i+1, s)
	}
	return b.String()
}

// jsonText is a role's output indented, or as it is when it is not JSON.
func jsonText(raw json.RawMessage) string {
	if len(raw) == 0 {
		return ""
	}
	var ind bytes.Buffer
	if json.Indent(&ind, raw, "", "  ") == nil {
		return ind.String()
	}
	return string(raw)
}

// reviewText is the reviewer's decision on one line and its comment.
func reviewText(r *pipeline.ReviewDecision) string {
	if r == nil {
		return ""
	}
	s := fmt.Sprintf("%s by %s", r.Decision, r.Reviewer)
	if !r.At.IsZero() {
		s += " at " + r.At.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	if r.Comment != "" {
		s += "\n\n" + r.Comment
	}
	return s
}
