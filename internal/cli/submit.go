package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/subjects"
)

type submitFlags struct {
	workflow, id, scope, verification, typ, queue, file, metadata string
	maxAttempts                                                   int
	wait                                                          bool
}

func newSubmitCmd(g *globals) *cobra.Command {
	var f submitFlags
	cmd := &cobra.Command{
		Use:   "submit",
		Short: "Submit one task from flags, or many from a JSON or JSON-lines file",
		Long: `Submit task requests to a queue. Each is checked with the same rules a worker applies
before it is published, so a bad file is refused whole with the line or index at fault.

With --wait, follow the tasks to their terminal events: a progress bar on stderr (on a
terminal), one JSON line per finished task on stdout, and exit status 1 if any task
did not complete (failed, rejected or cancelled).`,
		Example: `  drover submit --workflow demo --id T1 --scope "Add a health endpoint" --verification "GET /livez is 200" --wait
  drover submit --file examples/board.json --workflow demo-2 --wait`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			reqs, err := f.requests(cmd)
			if err != nil {
				return err
			}
			return submit(cmd.Context(), g, f, reqs)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.workflow, "workflow", "", "workflow ID (with --file: for entries that name none)")
	fl.StringVar(&f.id, "id", "", "task ID, unique within its workflow")
	fl.StringVar(&f.scope, "scope", "", "what to do")
	fl.StringVar(&f.verification, "verification", "", "what the judge checks")
	fl.StringVar(&f.typ, "type", "", `task type, for lessons and statistics (default "task")`)
	fl.IntVar(&f.maxAttempts, "max-attempts", 0, "implementer+judge rounds, 1 to 10 (default 3)")
	fl.StringVar(&f.metadata, "metadata", "", "metadata as a JSON object")
	fl.StringVar(&f.queue, "queue", subjects.DefaultQueue, "queue to submit to")
	fl.StringVarP(&f.file, "file", "f", "", `JSON array or JSON lines of task requests ("-" for stdin)`)
	fl.BoolVar(&f.wait, "wait", false, "follow the tasks to their terminal events")
	return cmd
}

// requests builds the requests from the flags or the file.
func (f submitFlags) requests(cmd *cobra.Command) ([]subjects.TaskRequest, error) {
	if err := subjects.ValidateQueue(f.queue); err != nil {
		return nil, fmt.Errorf("--queue: %w", err)
	}
	if f.file == "" {
		if f.workflow == "" || f.id == "" || f.scope == "" {
			return nil, errors.New("give --workflow, --id and --scope, or --file")
		}
		body := map[string]any{"workflow": f.workflow, "id": f.id, "scope": f.scope}
		if f.verification != "" {
			body["verification"] = f.verification
		}
		if f.typ != "" {
			body["type"] = f.typ
		}
		if f.maxAttempts != 0 {
			body["max_attempts"] = f.maxAttempts
		}
		if f.metadata != "" {
			body["metadata"] = json.RawMessage(f.metadata)
		}
		raw, err := json.Marshal(body)
		if err != nil {
			return nil, fmt.Errorf("--metadata: %w", err)
		}
		req, rej := subjects.DecodeTask(raw, subjects.Limits{})
		if rej != nil {
			return nil, fmt.Errorf("task: %s", rej.Msg)
		}
		return []subjects.TaskRequest{req}, nil
	}
	for _, name := range []string{"id", "scope", "verification", "type", "max-attempts", "metadata"} {
		if cmd.Flags().Changed(name) {
			return nil, fmt.Errorf("--%s does not go with --file: put it in the file", name)
		}
	}
	var r io.Reader = os.Stdin
	if f.file != "-" {
		file, err := os.Open(f.file)
		if err != nil {
			return nil, err
		}
		defer func() { _ = file.Close() }() // read only
		r = file
	}
	return parseTasks(r, f.file, f.workflow)
}

// parseTasks reads a JSON array or JSON lines of requests. Entries without
// a workflow get defaultWorkflow. Every entry is checked like a worker would.
func parseTasks(r io.Reader, name, defaultWorkflow string) ([]subjects.TaskRequest, error) {
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	var raws []json.RawMessage
	var where []string
	if t := bytes.TrimSpace(data); len(t) > 0 && t[0] == '[' {
		if err := json.Unmarshal(t, &raws); err != nil {
			return nil, fmt.Errorf("%s: not a JSON array of tasks: %w", name, err)
		}
		for i := range raws {
			where = append(where, fmt.Sprintf("%s: entry %d", name, i))
		}
	} else {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), 2<<20)
		for line := 1; sc.Scan(); line++ {
			if l := bytes.TrimSpace(sc.Bytes()); len(l) > 0 && l[0] != '#' {
				raws = append(raws, append(json.RawMessage(nil), l...))
				where = append(where, fmt.Sprintf("%s:%d", name, line))
			}
		}
		if err := sc.Err(); err != nil {
			return nil, fmt.Errorf("%s: %w", name, err)
		}
	}
	if len(raws) == 0 {
		return nil, fmt.Errorf("%s: no tasks", name)
	}
	var out []subjects.TaskRequest
	var problems []string
	seen := map[string]string{}
	for i, raw := range raws {
		raw = withWorkflow(raw, defaultWorkflow)
		req, rej := subjects.DecodeTask(raw, subjects.Limits{})
		if rej != nil {
			problems = append(problems, fmt.Sprintf("%s: %s: %s", where[i], rej.Reason, rej.Msg))
			continue
		}
		key := req.Workflow + "\x00" + req.ID
		if prev, dup := seen[key]; dup {
			problems = append(problems, fmt.Sprintf("%s: task %s/%s repeats %s", where[i], req.Workflow, req.ID, prev))
			continue
		}
		seen[key] = where[i]
		out = append(out, req)
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("%d invalid task(s), nothing submitted:\n  %s", len(problems), strings.Join(problems, "\n  "))
	}
	return out, nil
}

// withWorkflow sets "workflow" in an object that has none.
func withWorkflow(raw json.RawMessage, wf string) json.RawMessage {
	if wf == "" {
		return raw
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil || m == nil {
		return raw
	}
	if _, ok := m["workflow"]; ok {
		return raw
	}
	m["workflow"], _ = json.Marshal(wf)
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}

func submit(ctx context.Context, g *globals, f submitFlags, reqs []subjects.TaskRequest) error {
	c, err := g.connect(ctx, "submit")
	if err != nil {
		return err
	}
	defer c.Close()
	subs, after, err := publishAll(ctx, g, c, f.queue, reqs)
	if !f.wait || err != nil {
		for _, s := range subs {
			fmt.Fprintf(g.stderr, "submitted %s/%s as %s #%d%s\n", s.Workflow, s.Task, g.names.TaskSubject(f.queue), s.Seq, dupNote(s))
		}
		return err
	}
	return waitAll(ctx, g, c, subs, after)
}

// publishAll submits reqs to queue in order. It returns what was stored
// (up to the first error) and the audit stream's last sequence before the
// first, where waitAll starts following.
func publishAll(ctx context.Context, g *globals, c *client, queue string, reqs []subjects.TaskRequest) ([]producer.Submitted, uint64, error) {
	after, err := producer.AuditLastSeq(ctx, c.js, g.names)
	if err != nil {
		return nil, 0, err
	}
	subs := make([]producer.Submitted, 0, len(reqs))
	for _, r := range reqs {
		s, err := producer.Publish(ctx, c.js, g.names, queue, r)
		if err != nil {
			return subs, after, fmt.Errorf("%w (%d of %d submitted before it)", err, len(subs), len(reqs))
		}
		subs = append(subs, s)
	}
	return subs, after, nil
}

// dupNote marks a submission the server had already stored.
func dupNote(s producer.Submitted) string {
	if s.Duplicate {
		return " (duplicate: already submitted, stored once)"
	}
	return ""
}
