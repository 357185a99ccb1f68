package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/table"
	"github.com/droverhq/drover/internal/workflow"
	"github.com/droverhq/drover/subjects"
)

func newWorkflowCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "workflow",
		Short: "Pause, resume, cancel and inspect workflows",
		Long: `Control a workflow through the control subjects any worker answers
(drover.ctl.workflow.<wf>.pause|resume|cancel), or read its state from drover_state.

pause   lets running roles finish, starts no new role, parks the workflow's tasks
resume  continues every parked task from the exact role where it stopped
cancel  ends the workflow's open tasks with task_cancelled; later submissions are rejected`,
	}
	for _, action := range []string{workflow.ActionPause, workflow.ActionResume, workflow.ActionCancel} {
		cmd.AddCommand(newWorkflowActionCmd(g, action))
	}
	cmd.AddCommand(newWorkflowStatusCmd(g), newWorkflowListCmd(g))
	return cmd
}

func newWorkflowActionCmd(g *globals, action string) *cobra.Command {
	var reason string
	var timeout time.Duration
	c := &cobra.Command{
		Use:   action + " WORKFLOW",
		Short: map[string]string{"pause": "Pause a workflow", "resume": "Resume a paused workflow", "cancel": "Cancel a workflow"}[action],
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			wf := args[0]
			if err := subjects.ValidateID(wf); err != nil {
				return fmt.Errorf("workflow %q: %w", wf, err)
			}
			cl, err := g.connect(cmd.Context(), "workflow "+action)
			if err != nil {
				return err
			}
			defer cl.Close()
			body, _ := json.Marshal(map[string]string{"reason": reason})
			msg, err := controlRequest(cmd.Context(), cl.nc, g.names.CtlSubject(wf, action), body, timeout)
			if err != nil {
				return fmt.Errorf("%s %s: %w", action, wf, err)
			}
			var r workflow.Reply
			if err := json.Unmarshal(msg.Data, &r); err != nil {
				return fmt.Errorf("%s %s: bad reply %q: %w", action, wf, msg.Data, err)
			}
			if r.Error != "" {
				return errors.New(r.Error)
			}
			fmt.Fprintf(g.stdout, "workflow %s is %s (revision %d)\n", r.Workflow, r.State, r.Revision)
			return nil
		},
	}
	c.Flags().StringVar(&reason, "reason", "", "why, recorded in the workflow's state and audit event")
	c.Flags().DurationVar(&timeout, "timeout", 30*time.Second, "how long to wait for a worker's answer")
	return c
}

// controlRequest sends a control request and returns the worker's reply.
// It waits at most timeout, and no longer than ctx: Ctrl-C (the command's
// signal-aware context) ends the wait at once with context.Canceled.
func controlRequest(ctx context.Context, nc *nats.Conn, subject string, body []byte, timeout time.Duration) (*nats.Msg, error) {
	rctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	msg, err := nc.RequestWithContext(rctx, subject, body)
	if err != nil {
		if cerr := context.Cause(ctx); cerr != nil {
			return nil, cerr // the caller gave up: no hint about workers
		}
		return nil, fmt.Errorf("%w (is a worker running?)", err)
	}
	return msg, nil
}

func newWorkflowStatusCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "status WORKFLOW",
		Short: "Show a workflow's state and each task's state, stage, attempt and timings",
		Args:  cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			var st workflow.Status
			err := g.withState(cmd.Context(), "workflow status", func(kv jetstream.KeyValue) (err error) {
				st, err = workflow.GetStatus(cmd.Context(), kv, args[0])
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return json.NewEncoder(g.stdout).Encode(st)
			}
			fmt.Fprintf(g.stdout, "workflow %s: %s", st.Workflow, st.State.State)
			if st.State.Reason != "" {
				fmt.Fprintf(g.stdout, " (%s)", st.State.Reason)
			}
			fmt.Fprintf(g.stdout, ", %d tasks %v\n\n", len(st.Tasks), st.Counts)
			tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "TASK\tSTATE\tSTAGE\tATTEMPT\tWORKER\tSTARTED\tTOOK\tREASON")
			for _, t := range st.Tasks {
				fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t%s\t%s\t%s\n", t.Task, t.State, t.Stage, t.Attempt, t.Worker,
					t.StartedAt.Format(time.RFC3339), t.Took.Round(time.Millisecond), table.Dash(t.Reason))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON")
	return c
}

func newWorkflowListCmd(g *globals) *cobra.Command {
	var asJSON bool
	c := &cobra.Command{
		Use:   "list",
		Short: "List workflows with their task counts by state",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			var list []workflow.Summary
			err := g.withState(cmd.Context(), "workflow list", func(kv jetstream.KeyValue) (err error) {
				list, err = workflow.List(cmd.Context(), kv)
				return err
			})
			if err != nil {
				return err
			}
			if asJSON {
				return jsonLines(g.stdout, list)
			}
			tw := tabwriter.NewWriter(g.stdout, 0, 0, 2, ' ', 0)
			fmt.Fprintln(tw, "WORKFLOW\tSTATE\tTASKS\tRUNNING\tPAUSED\tCOMPLETED\tFAILED\tCANCELLED\tUPDATED")
			for _, s := range list {
				c := s.Counts
				fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%d\t%s\n", s.Workflow, s.State, s.Tasks, c[subjects.StateRunning], c[subjects.StatePaused],
					c[subjects.StateCompleted], c[subjects.StateFailed], c[subjects.StateCancelled], s.Updated.Format(time.RFC3339))
			}
			return tw.Flush()
		},
	}
	c.Flags().BoolVar(&asJSON, "json", false, "print JSON lines")
	return c
}
