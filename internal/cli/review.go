package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/user"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/blobs"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/review"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/internal/table"
	"github.com/droverhq/drover/subjects"
)

func newReviewCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "review",
		Short: "List, show, approve and reject tasks awaiting a person's review",
		Long: `The review gate (review.mode, review.queues, a request's review field or a
board's Review column) parks a task in drover_state as awaiting_review: after
the judge approved it (after_judge), or instead of the judge (instead). It holds
no pool slot and no worktree while it waits, on any number of workers.

approve  sends it on to delivery (the push, the merge queue or the pull request)
reject   sends it back to the implementer with the comment as feedback, like a
         judge's rejection (a rejected last attempt fails with max_attempts)

Decisions are requests on drover.ctl.review.<wf>.<task>.<reviewer> that any
worker answers, recorded with the subject's reviewer (--reviewer, default the NATS
--user), so NATS permissions can bind a reviewer to their user; a second decision
on the same review is refused ("already decided").`,
	}
	cmd.AddCommand(newReviewListCmd(g), newReviewShowCmd(g),
		newReviewDecideCmd(g, subjects.ReviewApprove), newReviewDecideCmd(g, subjects.ReviewReject))
	return cmd
}

func newReviewListCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:     "ls",
		Aliases: []string{"list"},
		Short:   "List the tasks awaiting review, oldest first, with how long each has waited",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var waiting []state.Task
			err := g.withState(cmd.Context(), "review ls", func(kv jetstream.KeyValue) (err error) {
				waiting, err = review.Waiting(cmd.Context(), kv)
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				now := time.Now()
				lines := make([]reviewLine, len(waiting))
				for i, t := range waiting {
					lines[i] = reviewItem(t, now)
				}
				return jsonLines(g.stdout, lines)
			}
			return writeReviewTable(g.stdout, waiting, time.Now())
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON lines")
	return c
}

// reviewLine is one task awaiting review, as `drover review ls --json`
// prints it.
type reviewLine struct {
	Workflow    string    `json:"workflow"`
	Task        string    `json:"task"`
	Mode        string    `json:"mode"`
	Attempt     int       `json:"attempt"`
	RequestedAt time.Time `json:"requested_at"`
	WaitingS    float64   `json:"waiting_s"`
	ExpiresAt   time.Time `json:"expires_at,omitzero"`
	Branch      string    `json:"branch,omitempty"`
	Revision    uint64    `json:"revision"`
}

func reviewItem(t state.Task, now time.Time) reviewLine {
	l := reviewLine{Workflow: t.Workflow, Task: t.Task, Attempt: t.Attempt, Revision: t.Revision, RequestedAt: t.UpdatedAt}
	if t.Review != nil {
		l.Mode, l.RequestedAt, l.ExpiresAt = t.Review.Mode, t.Review.RequestedAt, t.Review.ExpiresAt
	}
	if t.Workspace != nil {
		l.Branch = t.Workspace.Branch
	}
	l.WaitingS = now.Sub(l.RequestedAt).Round(time.Second).Seconds()
	return l
}

func writeReviewTable(w io.Writer, waiting []state.Task, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TASK\tMODE\tATTEMPT\tWAITING\tEXPIRES\tBRANCH")
	for _, t := range waiting {
		l := reviewItem(t, now)
		expires := "-"
		if !l.ExpiresAt.IsZero() {
			expires = "in " + l.ExpiresAt.Sub(now).Round(time.Second).String()
		}
		fmt.Fprintf(tw, "%s/%s\t%s\t%d\t%s\t%s\t%s\n", table.Cell(l.Workflow), table.Cell(l.Task), l.Mode, l.Attempt,
			now.Sub(l.RequestedAt).Round(time.Second), expires, table.Cell(l.Branch))
	}
	if len(waiting) == 0 {
		fmt.Fprintln(tw, "(nothing awaits review)")
	}
	return tw.Flush()
}

func newReviewShowCmd(g *globals) *cobra.Command {
	var workflow, id string
	c := &cobra.Command{
		Use:   "show WORKFLOW/TASK | --workflow W --id T",
		Short: "Show a task awaiting review: its scope, plan, diff and the judge's verdict",
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := resolveTaskRef(args, workflow, id, "--id")
			if err != nil {
				return err
			}
			return reviewShow(cmd.Context(), g, ref)
		},
	}
	c.Flags().StringVar(&workflow, "workflow", "", "workflow ID (with --id)")
	c.Flags().StringVar(&id, "id", "", "task ID (with --workflow)")
	return c
}

// reviewShowMax bounds each text review show prints (the patch has its
// own, larger bound): agent output is untrusted.
const (
	reviewShowMax  = 16 << 10
	reviewPatchMax = 256 << 10
	reviewIndent   = "  "
)

func reviewShow(ctx context.Context, g *globals, ref taskRef) error {
	cl, err := g.connect(ctx, "review show")
	if err != nil {
		return err
	}
	defer cl.Close()
	kv, err := cl.stateBucket(ctx, g)
	if err != nil {
		return err
	}
	t, err := state.New(kv).GetTask(ctx, ref.workflow, ref.task)
	if errors.Is(err, state.ErrNotFound) {
		return fmt.Errorf("task %s has no state", ref)
	}
	if err != nil {
		return err
	}
	var store *blobs.Store
	if obj, err := cl.js.ObjectStore(ctx, g.names.BlobStore()); err == nil {
		store = blobs.New(obj)
	}
	expand := func(raw json.RawMessage) json.RawMessage {
		if store == nil || len(raw) == 0 {
			return raw
		}
		if full, err := store.Expand(ctx, raw); err == nil {
			return full
		}
		return raw
	}
	out := g.stdout
	l := reviewItem(t, time.Now())
	fmt.Fprintf(out, "task      %s\nstate     %s (revision %d)\n", redact.Terminal(ref.String()), t.State, t.Revision)
	if t.State == subjects.StateAwaitingReview {
		fmt.Fprintf(out, "review    %s, attempt %d, waiting %s\n", l.Mode, t.Attempt, time.Since(l.RequestedAt).Round(time.Second))
	} else if t.Review != nil && t.Review.Decision != "" {
		fmt.Fprintf(out, "review    %s by %s\n", past(t.Review.Decision), redact.Terminal(t.Review.Reviewer))
	}
	var req subjects.TaskRequest
	_ = json.Unmarshal(t.Request, &req)
	section(out, "scope", req.Scope)
	if ev, ok := lastEvent(ctx, cl.js, g, ref, subjects.ActorOf(subjects.RolePlanner), subjects.EventPlannerDecision); ok {
		section(out, "plan", string(expand(ev.Output)))
	}
	if t.Review != nil && len(t.Review.Verdict) > 0 {
		section(out, "verdict", string(expand(t.Review.Verdict)))
	} else if t.Review != nil && t.Review.Mode == subjects.ReviewInstead {
		section(out, "verdict", "(none: you are the judge)")
	}
	ev, err := implementerChange(ctx, cl, g, ref, t.Attempt)
	if err != nil {
		section(out, "diff", "("+err.Error()+")")
		return nil
	}
	ch, err := recordedChange(ctx, store, ev)
	if err != nil {
		section(out, "diff", "("+err.Error()+")")
		return nil
	}
	patch, err := ch.PatchData()
	if err != nil {
		return fmt.Errorf("task %s attempt %d: %w", ref, ev.Attempt, err)
	}
	fmt.Fprintf(out, "diff      attempt %d, base %s, head %s, branch %s: %s\n", ev.Attempt,
		redact.Terminal(short(ch.Base)), redact.Terminal(short(ch.Head)), redact.Terminal(ch.Branch), redact.Terminal(changeLine(ch)))
	if len(patch) > reviewPatchMax {
		fmt.Fprintf(out, "(the patch is %d bytes; its first %d follow; drover task diff %s prints it all)\n", len(patch), reviewPatchMax, ref)
		patch = patch[:reviewPatchMax]
	}
	_, err = io.WriteString(out, redact.Terminal(string(patch)))
	return err
}

// past is a decision in the past tense.
func past(decision string) string {
	if decision == subjects.ReviewReject {
		return "rejected"
	}
	return decision + "d"
}

func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

// section prints a titled, indented, bounded block of untrusted text.
func section(w io.Writer, title, text string) {
	text = strings.TrimSpace(text)
	if len(text) > reviewShowMax {
		text = text[:reviewShowMax] + "\n(cut)"
	}
	fmt.Fprintf(w, "%s:\n", title)
	for line := range strings.Lines(redact.Terminal(text)) {
		fmt.Fprintf(w, "%s%s", reviewIndent, line)
	}
	fmt.Fprintln(w)
}

// lastEvent is the task's last event of one actor and type.
func lastEvent(ctx context.Context, js jetstream.JetStream, g *globals, ref taskRef, actor subjects.Actor, et subjects.EventType) (subjects.AuditEvent, bool) {
	var ev subjects.AuditEvent
	stream, err := js.Stream(ctx, g.names.AuditStream())
	if err != nil {
		return ev, false
	}
	m, err := stream.GetLastMsgForSubject(ctx, g.names.AuditSubject(ref.workflow, ref.task, actor, et))
	if err != nil || json.Unmarshal(m.Data, &ev) != nil {
		return ev, false
	}
	return ev, true
}

func newReviewDecideCmd(g *globals, decision string) *cobra.Command {
	var workflow, id, comment, reviewer string
	var timeout time.Duration
	short := map[string]string{
		subjects.ReviewApprove: "Approve a task awaiting review: it goes on to delivery",
		subjects.ReviewReject:  "Reject a task awaiting review: its implementer gets the comment as feedback",
	}[decision]
	c := &cobra.Command{
		Use:   decision + " WORKFLOW/TASK --comment TEXT [--reviewer NAME]",
		Short: short,
		Args:  cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := resolveTaskRef(args, workflow, id, "--id")
			if err != nil {
				return err
			}
			if reviewer == "" {
				reviewer = defaultReviewer(g.auth.User)
			}
			body := subjects.ReviewDecisionRequest{Decision: decision, Comment: comment, Reviewer: reviewer}
			if err := review.Validate(body); err != nil {
				return err
			}
			cl, err := g.connect(cmd.Context(), "review "+decision)
			if err != nil {
				return err
			}
			defer cl.Close()
			b, _ := json.Marshal(body)
			subj := g.names.ReviewSubject(ref.workflow, ref.task)
			if subjects.ValidateID(reviewer) == nil {
				subj = g.names.ReviewSubjectAs(ref.workflow, ref.task, reviewer)
			}
			msg, err := controlRequest(cmd.Context(), cl.nc, subj, b, timeout)
			if err != nil {
				return fmt.Errorf("review %s %s: %w", decision, ref, err)
			}
			var r subjects.ReviewReply
			if err := json.Unmarshal(msg.Data, &r); err != nil {
				return fmt.Errorf("review %s %s: bad reply %q: %w", decision, ref, msg.Data, err)
			}
			if r.Error != "" {
				return fmt.Errorf("review %s %s: %s", decision, ref, r.Error)
			}
			next := "on to delivery"
			switch {
			case r.State == subjects.StateFailed:
				next = "the task failed: that was its last allowed attempt"
			case decision == subjects.ReviewReject:
				next = "back to its implementer with the comment"
			}
			fmt.Fprintf(g.stdout, "%s %s by %s: %s (state %s, revision %d)\n", redact.Terminal(ref.String()), past(decision), redact.Terminal(reviewer), next, r.State, r.Revision)
			return nil
		},
	}
	c.Flags().StringVar(&workflow, "workflow", "", "workflow ID (with --id)")
	c.Flags().StringVar(&id, "id", "", "task ID (with --workflow)")
	c.Flags().StringVar(&comment, "comment", "", "why; a rejection's comment is the implementer's feedback (required to reject)")
	c.Flags().StringVar(&reviewer, "reviewer", "", "who decides, recorded in review_decided; sent in the subject, so a deployment can bind it to the NATS user (default: --user, else $USER@host)")
	c.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for a worker's answer")
	return c
}

// defaultReviewer is the NATS user when one logs in (so a deployment that
// binds reviewers to their users works without --reviewer), else
// $USER@host (the account's name when USER is unset).
func defaultReviewer(natsUser string) string {
	if natsUser != "" {
		return natsUser
	}
	name := os.Getenv("USER")
	if name == "" {
		if u, err := user.Current(); err == nil {
			name = u.Username
		}
	}
	if name == "" {
		name = "unknown"
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return name + "@" + host
}
