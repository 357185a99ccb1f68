package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/streamread"
	"github.com/droverhq/drover/subjects"
)

// logsPoll is how long task logs waits for the next line; a
// follower that is caught up checks the task's state this often.
const logsPoll = 500 * time.Millisecond

func newTaskLogsCmd(g *globals) *cobra.Command {
	var workflow, id string
	var follow, asJSON bool
	cmd := &cobra.Command{
		Use:   "logs WORKFLOW/TASK [--follow] | --workflow W --id T",
		Short: "Print what a task's agents said and did while they ran",
		Long: `Print a task's live activity from the live stream: each role's agent
messages, tool calls and tool results (an agent preset's streaming output),
or a plain exec agent's stdout lines, as the worker published them while the
role ran. The worker masks its configured secrets in them and bounds them;
here control characters are escaped once more, so nothing an agent printed
can move the cursor or recolour the terminal.

The live stream keeps lines for a while (24h, 10000 per task by default):
it is a window on running work. The audit stream (drover audit) is the
permanent record of results.

--follow waits for new lines until the task reaches a terminal state (or
Ctrl-C). --json prints each line as published, one JSON object a line.`,
		Example: `  drover task logs board-T1/T1.1
  drover task logs board-T1/T1.1 --follow
  drover task logs --workflow a/b --id T1 --json`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			ref, err := resolveTaskRef(args, workflow, id, "--id")
			if err != nil {
				return err
			}
			return taskLogs(cmd.Context(), g, ref, follow, asJSON)
		},
	}
	cmd.Flags().StringVar(&workflow, "workflow", "", "workflow ID (with --id)")
	cmd.Flags().StringVar(&id, "id", "", "task ID (with --workflow)")
	cmd.Flags().BoolVarP(&follow, "follow", "f", false, "wait for new lines until the task ends")
	cmd.Flags().BoolVar(&asJSON, "json", false, "print each line as published (JSON lines)")
	return cmd
}

// taskLogs prints a task's live lines, and with follow the ones that come
// until the task is terminal.
func taskLogs(ctx context.Context, g *globals, ref taskRef, follow, asJSON bool) error {
	c, err := g.connect(ctx, "task logs")
	if err != nil {
		return err
	}
	defer c.Close()
	stream := g.names.LiveStream()
	cons, err := streamread.OrderedConsumer(ctx, c.js, stream, jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{g.names.LiveSubject(ref.workflow, ref.task)},
		DeliverPolicy:  jetstream.DeliverAllPolicy,
	})
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return fmt.Errorf("live stream %s does not exist (has a worker of this version started with --prefix %s?)", stream, g.names.Prefix())
	}
	if err != nil {
		return fmt.Errorf("live stream %s: %w", stream, err)
	}
	defer streamread.DeleteConsumer(ctx, streamread.StreamOf(c.js, stream), cons)
	var kv jetstream.KeyValue
	if follow {
		if kv, err = c.stateBucket(ctx, g); err != nil {
			return err
		}
	}
	info, err := cons.Info(ctx)
	if err != nil {
		return fmt.Errorf("live stream %s: %w", stream, err)
	}
	if info.NumPending == 0 && !follow {
		return nil
	}
	it, err := cons.Messages()
	if err != nil {
		return fmt.Errorf("live stream %s: %w", stream, err)
	}
	defer it.Stop()
	for {
		msg, idle, err := nextLine(ctx, it)
		switch {
		case ctx.Err() != nil:
			return nil // Ctrl-C
		case err != nil:
			return fmt.Errorf("live stream %s: %w", stream, err)
		case msg != nil:
			if err := writeLiveLine(g.stdout, msg.Data(), asJSON); err != nil {
				return err
			}
			md, err := msg.Metadata()
			if err != nil || md.NumPending > 0 {
				continue
			}
		case !idle:
			continue
		}
		// Caught up: done without --follow, or once the task has ended
		// (its last role's lines are published before its terminal state
		// is written).
		if !follow {
			return nil
		}
		if ended, err := taskEnded(ctx, kv, ref); err != nil || ended {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
	}
}

// nextLine waits up to logsPoll for the next line; idle says none came.
func nextLine(ctx context.Context, it jetstream.MessagesContext) (jetstream.Msg, bool, error) {
	nctx, cancel := context.WithTimeout(ctx, logsPoll)
	defer cancel()
	msg, err := it.Next(jetstream.NextContext(nctx))
	if err != nil && nctx.Err() != nil && ctx.Err() == nil {
		return nil, true, nil
	}
	return msg, false, err
}

// taskEnded reports whether the task's state is terminal.
func taskEnded(ctx context.Context, kv jetstream.KeyValue, ref taskRef) (bool, error) {
	e, err := kv.Get(ctx, subjects.StateKey(ref.workflow, ref.task))
	if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
		return false, nil // not picked up yet
	}
	if err != nil {
		return false, fmt.Errorf("task %s state: %w", ref, err)
	}
	var st subjects.TaskState
	if err := json.Unmarshal(e.Value(), &st); err != nil {
		return false, fmt.Errorf("task %s: state holds invalid JSON: %w", ref, err)
	}
	return subjects.TerminalState(st.State), nil
}

// writeLiveLine prints one live line: as published with asJSON (compacted
// to one line), else "time role#attempt kind text", every field escaped
// for the terminal and continuation lines indented.
func writeLiveLine(w io.Writer, data []byte, asJSON bool) error {
	var l subjects.LiveLine
	if err := json.Unmarshal(data, &l); err != nil {
		_, err := fmt.Fprintf(w, "(not a live line: %s)\n", redact.Terminal(redact.ClipRunes(string(data), 120)))
		return err
	}
	if asJSON {
		var buf bytes.Buffer
		if err := json.Compact(&buf, data); err != nil {
			return err
		}
		buf.WriteByte('\n')
		_, err := w.Write(buf.Bytes())
		return err
	}
	text := strings.ReplaceAll(redact.Terminal(l.Text), "\n", "\n    ")
	var dropped string
	if l.Dropped > 0 {
		dropped = fmt.Sprintf(" (%d lines dropped before)", l.Dropped)
	}
	_, err := fmt.Fprintf(w, "%s %s#%d %s %s%s\n", l.Time.Local().Format("15:04:05"),
		redact.Terminal(string(l.Role)), l.Attempt, redact.Terminal(string(l.Kind)), text, dropped)
	return err
}
