package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

func newTaskCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "task",
		Short: "Inspect tasks",
		Args:  cobra.NoArgs,
	}
	cmd.AddCommand(newTaskGetCmd(g), newTaskDiffCmd(g), newTaskLogsCmd(g))
	return cmd
}

// taskRef names one task: a workflow ID and a task ID.
type taskRef struct{ workflow, task string }

func (r taskRef) String() string { return r.workflow + "/" + r.task }

// resolveTaskRef reads a task from a positional "W/T" (split at the first
// "/", so a task ID may contain "/") or from the --workflow and --id flags,
// the form for a workflow ID that contains "/".
func resolveTaskRef(args []string, workflow, id, idFlag string) (taskRef, error) {
	var r taskRef
	switch {
	case len(args) > 0 && (workflow != "" || id != ""):
		return r, fmt.Errorf("give the task either as WORKFLOW/TASK or with --workflow and %s, not both", idFlag)
	case len(args) > 0:
		var ok bool
		r.workflow, r.task, ok = strings.Cut(args[0], "/")
		if !ok {
			return r, fmt.Errorf("task %q: want WORKFLOW/TASK (or --workflow W %s T)", args[0], idFlag)
		}
	case workflow == "" || id == "":
		return r, fmt.Errorf("name the task as WORKFLOW/TASK or with --workflow and %s", idFlag)
	default:
		r = taskRef{workflow, id}
	}
	if err := subjects.ValidateID(r.workflow); err != nil {
		return r, fmt.Errorf("workflow %q: %w", r.workflow, err)
	}
	if err := subjects.ValidateID(r.task); err != nil {
		return r, fmt.Errorf("task %q: %w", r.task, err)
	}
	return r, nil
}

func newTaskGetCmd(g *globals) *cobra.Command {
	var workflow, id string
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "get WORKFLOW/TASK | --workflow W --id T",
		Short: "Show a task's state: stage, attempt, worker, timings, outcome and result",
		Long: `Show a task's state from the state bucket: where it stands, which worker
holds it, when it started and last changed, why it failed, and the final
result of a completed task.

WORKFLOW/TASK is split at the first "/"; for a workflow ID that contains "/",
use --workflow and --id. A task with no state has not been picked up by a
worker yet; the command then exits with status 1.`,
		Example: `  drover task get board-T1/T1.1
  drover task get --workflow a/b --id T1 --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := resolveTaskRef(args, workflow, id, "--id")
			if err != nil {
				return err
			}
			return taskGet(cmd.Context(), g, ref, asJSON)
		},
	}
	cmd.Flags().StringVar(&workflow, "workflow", "", "workflow ID (with --id)")
	cmd.Flags().StringVar(&id, "id", "", "task ID (with --workflow)")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print the state as stored (JSON), bookkeeping fields included")
	return cmd
}

// taskGet prints one task's state.
func taskGet(ctx context.Context, g *globals, ref taskRef, asJSON bool) error {
	c, err := g.connect(ctx, "task get")
	if err != nil {
		return err
	}
	defer c.Close()
	kv, err := c.stateBucket(ctx, g)
	if err != nil {
		return err
	}
	e, err := kv.Get(ctx, subjects.StateKey(ref.workflow, ref.task))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return fmt.Errorf("task %s has not been picked up yet (no state)", ref)
	}
	if err != nil {
		return fmt.Errorf("task %s: %w", ref, err)
	}
	if asJSON {
		_, err := g.stdout.Write(append(bytes.TrimSpace(e.Value()), '\n'))
		return err
	}
	var st subjects.TaskState
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return fmt.Errorf("task %s: state holds invalid JSON (see --json): %w", ref, err)
	}
	return writeTaskState(g.stdout, st, e.Revision(), time.Now())
}

// writeTaskState prints st readably, control characters and bidi
// overrides escaped (redact.Terminal); the outbox (events waiting to be
// published) is left out.
func writeTaskState(w io.Writer, st subjects.TaskState, rev uint64, now time.Time) error {
	tw := tabwriter.NewWriter(w, 0, 4, 2, ' ', 0)
	row := func(k, v string) {
		if v != "" {
			fmt.Fprintf(tw, "%s\t%s\n", k, redact.Terminal(v))
		}
	}
	row("workflow", st.Workflow)
	row("task", st.Task)
	row("state", st.State)
	row("stage", st.Stage)
	row("attempt", fmt.Sprint(st.Attempt))
	row("type", st.Type)
	row("reason", string(st.Reason))
	row("worker", st.Worker)
	if st.Queue != "" {
		row("request", fmt.Sprintf("queue %s, stream seq %d, delivery %d", st.Queue, st.StreamSeq, st.Delivery))
	}
	row("revision", fmt.Sprint(rev))
	row("started_at", taskTime(st.StartedAt))
	row("updated_at", taskTime(st.UpdatedAt))
	if !st.StartedAt.IsZero() && !st.UpdatedAt.IsZero() {
		if subjects.TerminalState(st.State) {
			row("took", st.UpdatedAt.Sub(st.StartedAt).Round(time.Millisecond).String())
		} else {
			row("running for", now.Sub(st.StartedAt).Round(time.Second).String())
		}
	}
	if len(st.Tries) > 0 {
		var tries []string
		for _, r := range subjects.Roles {
			if n := st.Tries[r]; n > 0 {
				tries = append(tries, fmt.Sprintf("%s %d", r, n))
			}
		}
		row("failed tries", strings.Join(tries, ", "))
	}
	row("feedback", redact.ClipRunes(redact.FirstLine(st.Feedback), 120))
	roles := make([]string, 0, len(st.Outputs))
	for r := range st.Outputs {
		roles = append(roles, string(r))
	}
	sort.Slice(roles, func(i, j int) bool { return roleOrder(roles[i]) < roleOrder(roles[j]) })
	for _, r := range roles {
		row("output "+r, st.Outputs[subjects.Role(r)])
	}
	if len(st.Request) > 0 {
		row("parked request", fmt.Sprintf("%d bytes", len(st.Request)))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if len(st.Result) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if json.Indent(&buf, st.Result, "  ", "  ") != nil {
		buf.Reset()
		buf.Write(st.Result)
	}
	_, err := fmt.Fprintf(w, "result:\n  %s\n", redact.Terminal(buf.String()))
	return err
}

// roleOrder sorts roles in pipeline order, unknown ones last.
func roleOrder(r string) int {
	for i, x := range subjects.Roles {
		if string(x) == r {
			return i
		}
	}
	return len(subjects.Roles)
}

// taskTime renders a time in UTC with milliseconds; zero is empty.
func taskTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format("2006-01-02T15:04:05.000Z07:00")
}

// withState connects for the command what (named in errors), opens the
// state bucket and runs fn with it; the connection is closed after.
func (g *globals) withState(ctx context.Context, what string, fn func(kv jetstream.KeyValue) error) error {
	cl, err := g.connect(ctx, what)
	if err != nil {
		return err
	}
	defer cl.Close()
	kv, err := cl.stateBucket(ctx, g)
	if err != nil {
		return err
	}
	return fn(kv)
}

// jsonLines writes each item to w as one line of JSON.
func jsonLines[T any](w io.Writer, items []T) error {
	enc := json.NewEncoder(w)
	for _, it := range items {
		if err := enc.Encode(it); err != nil {
			return err
		}
	}
	return nil
}

// stateBucket opens the deployment's state bucket, saying what a missing
// one most likely means.
func (c *client) stateBucket(ctx context.Context, g *globals) (jetstream.KeyValue, error) {
	kv, err := c.js.KeyValue(ctx, g.names.StateBucket())
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("state bucket %s does not exist (has a worker started with --prefix %s?)", g.names.StateBucket(), g.names.Prefix())
	}
	if err != nil {
		return nil, fmt.Errorf("state bucket %s: %w", g.names.StateBucket(), err)
	}
	return kv, nil
}
