package cli

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/board"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

func newBoardCmd(g *globals) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "board",
		Short: "Validate, fix, submit and sync markdown task boards",
		Long: `A board is a markdown file with one or more task tables among its prose:

  | ID | Scope | Status | Branch | Verification |
  |----|-------|--------|--------|--------------|
  | T1 | Add a health endpoint | [ ] | feat/livez | GET /livez is 200 |

A task table's header names at least ID, Scope and Status (any case, any order);
Branch, Verification and Type are optional, other columns are kept. Status is
"[ ]" (open) or "[x]" (done). Tables in fenced code blocks are ignored. Every
command keeps the bytes outside the task tables exactly as they were.`,
		Args: cobra.NoArgs,
	}
	cmd.AddCommand(newBoardValidateCmd(g), newBoardSubmitCmd(g), newBoardSyncCmd(g))
	return cmd
}

func newBoardValidateCmd(g *globals) *cobra.Command {
	var fix, dryRun bool
	cmd := &cobra.Command{
		Use:   "validate FILE",
		Short: "Report every problem of a board at its line; --fix rewrites it in canonical form",
		Long: `Report every problem of a board as FILE:LINE: message (malformed rows, missing
pipes, duplicate IDs, invalid IDs, unknown status markers, missing scopes, separator
rows) and exit with status 1, or print "FILE: N tasks, M open, OK".

--fix rewrites the file in canonical form without losing a row: aligned columns,
"[X]" as "[x]", an empty status as "[ ]", an unknown marker as "[ ]" with the marker
kept in a Notes column, extra cells joined into Scope (an unescaped "|") or kept in
Notes, missing cells padded, repeated IDs renamed "ID-2". It prints each change
(at the line it had), writes the file atomically with its permissions, then reports
what it could not fix (a row without ID or scope) at the lines of the new file.
--fix --dry-run prints the fixed board on stdout and the rest on stderr.`,
		Example: `  drover board validate examples/board.md
  drover board validate --fix --dry-run sprint.md | diff sprint.md -
  drover board validate --fix sprint.md`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if dryRun && !fix {
				return errors.New("--dry-run goes with --fix")
			}
			file := args[0]
			src, err := os.ReadFile(file)
			if err != nil {
				return err
			}
			if !fix {
				b, problems := board.Parse(src, file)
				return reportBoard(g.stdout, file, b, problems)
			}
			out, changes, left := board.FixReport(src, file)
			w := g.stdout
			if dryRun {
				w = g.stderr
			}
			for _, c := range changes {
				fmt.Fprintln(w, board.Problem{Line: c.Line, Msg: "fixed: " + c.Msg}.In(file))
			}
			switch {
			case dryRun:
				if _, err := g.stdout.Write(out); err != nil {
					return err
				}
			case bytes.Equal(out, src):
				fmt.Fprintf(w, "%s: already in canonical form\n", file)
			default:
				if err := board.WriteFile(file, out); err != nil {
					return fmt.Errorf("%s: %w", file, err)
				}
				fmt.Fprintf(w, "%s: rewritten with %d change(s)\n", file, len(changes))
			}
			b, _ := board.Parse(out, file)
			return reportBoard(w, file, b, left)
		},
	}
	cmd.Flags().BoolVar(&fix, "fix", false, "rewrite the board in canonical form")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "with --fix: print the fixed board instead of writing it")
	return cmd
}

// reportBoard prints a board's problems and fails, or its counts.
func reportBoard(w io.Writer, file string, b *board.Board, problems []board.Problem) error {
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(w, p.In(file))
		}
		fmt.Fprintf(w, "%s: %d problem(s)\n", file, len(problems))
		return exitCode(1)
	}
	tasks, open := b.Counts()
	fmt.Fprintf(w, "%s: %d tasks, %d open, OK\n", file, tasks, open)
	return nil
}

// loadBoard reads a board that must have no problems: it prints them on
// stderr and fails otherwise.
func loadBoard(g *globals, file, nothing string) (*board.Board, error) {
	src, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	b, problems := board.Parse(src, file)
	if len(problems) > 0 {
		for _, p := range problems {
			fmt.Fprintln(g.stderr, p.In(file))
		}
		fmt.Fprintf(g.stderr, "%s: %d problem(s), %s (drover board validate --fix %s)\n", file, len(problems), nothing, file)
		return nil, exitCode(1)
	}
	return b, nil
}

// boardWorkflow is --workflow, or the board's default.
func boardWorkflow(b *board.Board, flag string) (string, error) {
	if flag == "" {
		return b.Workflow(), nil
	}
	if err := subjects.ValidateID(flag); err != nil {
		return "", fmt.Errorf("--workflow %q: %w", flag, err)
	}
	return flag, nil
}

func newBoardSubmitCmd(g *globals) *cobra.Command {
	var workflow, queue, typ string
	var wait bool
	cmd := &cobra.Command{
		Use:   "submit FILE",
		Short: "Submit a board's open rows as one workflow",
		Long: `Submit each open ("[ ]") row of a board as a task request of one workflow, named
after the file by default ("sprint 7.md" is workflow "sprint-7"). A request carries
the row's ID, Scope, Verification and Type (--type for rows with none), and metadata
{"board": {"file": ..., "line": ..., "branch": ...}}. A board with any problem is
refused whole: nothing is submitted.

Submitting again within the duplicate window stores each task once; a task ID is used
once per workflow, so run a board again under a new --workflow. --wait follows the
tasks like drover submit --wait: one JSON line per finished task, exit status 1 if
any did not complete. Then drover board sync writes the outcomes back into the board.`,
		Example: `  drover board submit examples/board.md --wait
  drover board submit sprint.md --workflow sprint-7-retry --type feature`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			if err := subjects.ValidateQueue(queue); err != nil {
				return fmt.Errorf("--queue: %w", err)
			}
			if typ != "" {
				if err := board.ValidateType(typ); err != nil {
					return fmt.Errorf("--type: %w", err)
				}
			}
			b, err := loadBoard(g, file, "nothing submitted")
			if err != nil {
				return err
			}
			wf, err := boardWorkflow(b, workflow)
			if err != nil {
				return err
			}
			reqs := b.Requests(wf, typ)
			tasks, _ := b.Counts()
			if len(reqs) == 0 {
				fmt.Fprintf(g.stderr, "%s: no open tasks (%d done), nothing submitted\n", file, tasks)
				return nil
			}
			fmt.Fprintf(g.stderr, "%s: submitting %d open task(s) of %d as workflow %s\n", file, len(reqs), tasks, wf)
			return submit(cmd.Context(), g, submitFlags{queue: queue, wait: wait}, reqs)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&workflow, "workflow", "", "workflow ID (default: the file's base name without extension)")
	fl.StringVar(&queue, "queue", subjects.DefaultQueue, "queue to submit to")
	fl.StringVar(&typ, "type", "", `task type of rows without a Type cell (default "task")`)
	fl.BoolVar(&wait, "wait", false, "follow the tasks to their terminal events")
	return cmd
}

func newBoardSyncCmd(g *globals) *cobra.Command {
	var workflow string
	var dryRun, reopenMissing bool
	cmd := &cobra.Command{
		Use:   "sync FILE",
		Short: "Write each task's state from drover_state into the board's Status column",
		Long: `Read each row's task state from the state bucket and write it into its status
cell: completed is "[x]"; running, paused, failed and cancelled are "[ ]". A row marked
"[x]" whose task is not completed is reopened: the board heals from the truth, and
nothing is marked done that is not. A row whose task has no state (never submitted to
the workflow, or not picked up yet) keeps its mark; --reopen-missing sets "[ ]" on
those too. Only the changed status cells are rewritten; every other byte stays.

Prints FILE:LINE: ID [ ] -> [x] (state) per changed row. A board with problems is
refused; fix it first.`,
		Example: `  drover board sync examples/board.md
  drover board sync sprint.md --workflow sprint-7-retry --dry-run`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			file := args[0]
			b, err := loadBoard(g, file, "nothing synced")
			if err != nil {
				return err
			}
			wf, err := boardWorkflow(b, workflow)
			if err != nil {
				return err
			}
			return syncBoard(cmd.Context(), g, b, file, wf, dryRun, board.SyncOptions{ReopenMissing: reopenMissing})
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&workflow, "workflow", "", "workflow ID (default: the file's base name without extension)")
	fl.BoolVar(&dryRun, "dry-run", false, "print the changes without writing the file")
	fl.BoolVar(&reopenMissing, "reopen-missing", false, `also set "[ ]" on done rows whose task has no state`)
	return cmd
}

func syncBoard(ctx context.Context, g *globals, b *board.Board, file, wf string, dryRun bool, opts board.SyncOptions) error {
	c, err := g.connect(ctx, "board sync")
	if err != nil {
		return err
	}
	defer c.Close()
	kv, err := c.stateBucket(ctx, g)
	if err != nil {
		return err
	}
	st := state.New(kv)
	changes, err := b.Sync(func(id string) (string, bool, error) {
		t, err := st.GetTask(ctx, wf, id)
		if errors.Is(err, state.ErrNotFound) {
			return "", false, nil
		}
		return t.State, err == nil, err
	}, opts)
	if err != nil {
		return err
	}
	for _, ch := range changes {
		why := ch.State
		if why == "" {
			why = "no state"
		}
		fmt.Fprintf(g.stdout, "%s:%d: %s %s -> %s (%s)\n", file, ch.Line, ch.ID, ch.From.Marker(), ch.To.Marker(), why)
	}
	switch {
	case len(changes) == 0:
		fmt.Fprintf(g.stdout, "%s: in sync with workflow %s\n", file, wf)
	case dryRun:
		fmt.Fprintf(g.stdout, "%s: %d row(s) would change (dry run, file not written)\n", file, len(changes))
	default:
		if err := board.WriteFile(file, b.Render()); err != nil {
			return fmt.Errorf("%s: %w", file, err)
		}
		fmt.Fprintf(g.stdout, "%s: %d row(s) updated from workflow %s\n", file, len(changes), wf)
	}
	return nil
}
