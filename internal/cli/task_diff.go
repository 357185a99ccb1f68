package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/blobs"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

// ErrNoWorkspace is returned by `drover task diff` for a task whose
// implementer ran without a workspace: there is no recorded change.
var ErrNoWorkspace = errors.New("no recorded change: the task ran without a workspace (see workspace.repo)")

func newTaskDiffCmd(g *globals) *cobra.Command {
	var workflow, id string
	var attempt int
	cmd := &cobra.Command{
		Use:   "diff WORKFLOW/TASK [--attempt N] | --workflow W --id T",
		Short: "Print the change an implementer attempt recorded, as a patch git apply takes",
		Long: `Print the patch from the task's pinned base commit to the head an
implementer attempt left (default: the last attempt), as recorded in that
attempt's implementer_change event; a patch stored in the blob store is
fetched from it and checked against its sha256.

The output applies with git apply (or git apply --index) to the base commit,
which the first line on stderr names with the attempt's head and files. To a
terminal, control characters are escaped; redirected, the bytes are exactly
the recorded patch. An attempt that changed nothing prints nothing. A task
that ran without a workspace has no recorded change: the command fails.`,
		Example: `  drover task diff board-T1/T1.1 > t1.patch && git apply --index t1.patch
  drover task diff board-T1/T1.1 --attempt 1`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := resolveTaskRef(args, workflow, id, "--id")
			if err != nil {
				return err
			}
			if attempt < 0 {
				return fmt.Errorf("--attempt %d: want 1 or more (0: the last)", attempt)
			}
			return taskDiff(cmd.Context(), g, ref, attempt)
		},
	}
	cmd.Flags().StringVar(&workflow, "workflow", "", "workflow ID (with --id)")
	cmd.Flags().StringVar(&id, "id", "", "task ID (with --workflow)")
	cmd.Flags().IntVar(&attempt, "attempt", 0, "the implementer attempt (default: the last recorded)")
	return cmd
}

// taskDiff prints the patch of one attempt of a task.
func taskDiff(ctx context.Context, g *globals, ref taskRef, attempt int) error {
	c, err := g.connect(ctx, "task diff")
	if err != nil {
		return err
	}
	defer c.Close()
	ev, err := implementerChange(ctx, c, g, ref, attempt)
	if err != nil {
		return err
	}
	var store *blobs.Store
	if obj, err := c.js.ObjectStore(ctx, g.names.BlobStore()); err == nil {
		store = blobs.New(obj)
	} else if !errors.Is(err, jetstream.ErrBucketNotFound) && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("blob store %s: %w", g.names.BlobStore(), err)
	}
	ch, err := recordedChange(ctx, store, ev)
	if err != nil {
		return fmt.Errorf("task %s attempt %d: %w", ref, ev.Attempt, err)
	}
	patch, err := ch.PatchData()
	if err != nil {
		return fmt.Errorf("task %s attempt %d: %w", ref, ev.Attempt, err)
	}
	what := changeLine(ch)
	fmt.Fprintf(g.stderr, "%s attempt %d: base %s head %s branch %s: %s\n", ref, ev.Attempt,
		redact.Terminal(ch.Base), redact.Terminal(ch.Head), redact.Terminal(ch.Branch), redact.Terminal(what))
	return writePatch(g.stdout, patch)
}

// writePatch writes the patch as recorded, or escaped to a terminal: it is
// the agent's work, untrusted text.
func writePatch(w io.Writer, patch []byte) error {
	if isTerminal(w) {
		_, err := io.WriteString(w, redact.Terminal(string(patch)))
		return err
	}
	_, err := w.Write(patch)
	return err
}

// implementerChange finds the implementer_change event of the attempt (0:
// the last one recorded).
func implementerChange(ctx context.Context, c *client, g *globals, ref taskRef, attempt int) (subjects.AuditEvent, error) {
	var (
		found subjects.AuditEvent
		ok    bool
		seen  []int
	)
	q := audit.Query{Workflow: ref.workflow, Task: ref.task, Actor: subjects.ActorOf(subjects.RoleImplementer), Type: subjects.EventImplementerChange}
	err := audit.Replay(ctx, c.js, g.names, q, func(r audit.Record) error {
		if r.Err != nil {
			return nil // not an event: another attempt's, or garbage
		}
		seen = append(seen, r.Event.Attempt)
		if attempt == 0 || r.Event.Attempt == attempt {
			found, ok = r.Event, true // the last one wins: a redelivered attempt's record
		}
		return nil
	})
	if err != nil {
		return found, auditStreamErr(g, err)
	}
	switch {
	case !ok && len(seen) == 0:
		return found, fmt.Errorf("task %s has no implementer_change event (not run yet, or the events expired)", ref)
	case !ok:
		return found, fmt.Errorf("task %s has no implementer_change event of attempt %d (recorded attempts: %v)", ref, attempt, seen)
	}
	return found, nil
}

// recordedChange reads metadata.workspace of an implementer_change event,
// fetching what the blob store holds for it.
func recordedChange(ctx context.Context, store *blobs.Store, ev subjects.AuditEvent) (*subjects.WorkspaceChange, error) {
	var meta map[string]json.RawMessage
	if len(ev.Metadata) > 0 {
		if err := json.Unmarshal(ev.Metadata, &meta); err != nil {
			return nil, fmt.Errorf("event metadata: %w", err)
		}
	}
	raw := meta[audit.MetaWorkspace]
	if len(raw) == 0 || string(raw) == "null" {
		return nil, ErrNoWorkspace
	}
	if store != nil {
		var err error
		if raw, err = store.Expand(ctx, raw); err != nil {
			return nil, fmt.Errorf("recorded change: %w", err)
		}
	}
	var ch subjects.WorkspaceChange
	if err := json.Unmarshal(raw, &ch); err != nil {
		return nil, fmt.Errorf("recorded change: %w", err)
	}
	return &ch, nil
}

// changeLine sums up a change: files, lines added and removed.
func changeLine(ch *subjects.WorkspaceChange) string { return audit.ChangeSummary(*ch) }
