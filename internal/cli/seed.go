package cli

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// seed submits serve's --submit file once the worker runs, waits for the
// tasks, and prints the workflow's audit trail and summary.
func seed(ctx context.Context, g *globals, w *worker.Worker, url string, f serveFlags) {
	select {
	case <-w.Started():
	case <-ctx.Done():
		return
	}
	wf := f.seedWorkflow
	if wf == "" {
		wf = "example-" + time.Now().UTC().Format("20060102-150405")
	}
	file, err := os.Open(f.seedFile)
	if err != nil {
		g.log.Error("--submit", "err", err)
		return
	}
	reqs, err := parseTasks(file, f.seedFile, wf)
	_ = file.Close() // read only
	if err != nil {
		g.log.Error("--submit", "err", err)
		return
	}
	cg := *g
	cg.natsURL = url
	if g.natsURL == "" {
		cg.auth = f.server.clientAuth(g.auth) // the embedded server's own credentials
	}
	c, err := cg.connect(ctx, "seed")
	if err != nil {
		g.log.Error("--submit", "err", err)
		return
	}
	defer c.Close()
	// The first queue this worker consumes, so the tasks reach it.
	queue := subjects.DefaultQueue
	if len(f.queues) > 0 {
		queue = f.queues[0]
	}
	subs, after, err := publishAll(ctx, g, c, queue, reqs)
	if err != nil {
		g.log.Error("--submit", "err", err)
		return
	}
	fmt.Fprintf(g.stderr, "\nsubmitted %d tasks of %s as workflow %s; following them to the end...\n\n", len(subs), f.seedFile, wf)
	if err := waitAll(ctx, g, c, subs, after); err != nil {
		if _, isExit := err.(exitCode); !isExit {
			g.log.Error("--submit", "err", err)
			return
		}
	}
	var events []subjects.AuditEvent
	table := newEventTable(g.stdout)
	fmt.Fprintf(g.stdout, "\nThe audit trail of %s (drover audit --workflow %s):\n\n", wf, wf)
	err = audit.Replay(ctx, c.js, g.names, audit.Query{Workflow: wf}, func(r audit.Record) error {
		table.Add(r)
		events = append(events, r.Event)
		return nil
	})
	if err != nil {
		g.log.Error("--submit: replay", "err", err)
		return
	}
	_ = table.Flush()
	fmt.Fprintf(g.stdout, "\nSummary (drover audit --workflow %s --summary):\n\n", wf)
	_ = audit.Summarize(events).WriteTable(g.stdout)
	fmt.Fprintf(g.stdout, "\nStill serving on %s; try `drover audit --follow` in another terminal. Ctrl-C to stop.\n", url)
}
