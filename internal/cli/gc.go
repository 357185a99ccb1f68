package cli

import (
	"context"
	"errors"
	"fmt"
	"text/tabwriter"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/retention"
)

// gcFlags are the retention settings, shared by drover gc and serve's
// periodic gc.
type gcFlags struct {
	stateMaxAge, blobMinAge, blobMaxAge time.Duration
}

// register adds the retention flags to fl.
func (f *gcFlags) register(cmd *cobra.Command) {
	fl := cmd.Flags()
	fl.DurationVar(&f.stateMaxAge, "state-retention", retention.DefaultStateMaxAge,
		"gc removes a completed, failed or cancelled task's state (and an idle workflow's) this long after its last write")
	fl.DurationVar(&f.blobMinAge, "blob-retention", retention.DefaultBlobMinAge,
		"gc removes a blob this long after it was written when no state, cached result or audit event refers to it")
	fl.DurationVar(&f.blobMaxAge, "blob-max-age", 0,
		"opt in: gc also removes blobs older than this that audit events refer to, making those old events' large values unreadable (0: never)")
}

func (f gcFlags) options(g *globals, dryRun bool) retention.Options {
	return retention.Options{StateMaxAge: f.stateMaxAge, BlobMinAge: f.blobMinAge, BlobMaxAge: f.blobMaxAge, DryRun: dryRun, Log: g.log}
}

func newGcCmd(g *globals) *cobra.Command {
	var (
		f      gcFlags
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "gc",
		Short: "Remove old finished task state and old blobs that nothing needs",
		Long: `Remove what Drover keeps but no longer needs, and print what was removed and kept.

- Task state: the key of a completed, failed or cancelled task last written more than
  --state-retention ago (default 30 days), and a workflow's key as old once none of its
  task keys is left (a paused workflow's key is kept). A running or paused task's state
  is never removed. Once removed, the task is unknown to drover task get and board sync,
  and the same task ID submitted again runs again.
- Blobs (large values stored by reference): one written more than --blob-retention ago
  (default 30 days) that no kept task state, no cached role result and no audit event
  refers to. The audit stream is the permanent record: blobs its events refer to are
  kept for ever, unless --blob-max-age opts in to removing those older than it, which
  makes those old events' large values unreadable.

The state bucket is read first, so nothing an open task refers to is removed. A state
key is removed only at the revision that was read. The DLQ and lessons streams need no
gc: they age out by themselves (serve --dlq-max-age, --lessons-max-age). A worker runs
gc itself every --gc-interval (serve; default off).`,
		Example: `  drover gc --dry-run
  drover gc --state-retention 720h
  drover gc --blob-max-age 8760h`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			c, err := g.connect(cmd.Context(), "gc")
			if err != nil {
				return err
			}
			defer c.Close()
			stores, err := gcStores(cmd.Context(), g, c.js)
			if err != nil {
				return err
			}
			rep, err := retention.Run(cmd.Context(), stores, f.options(g, dryRun))
			printGC(g, rep)
			return err
		},
	}
	f.register(cmd)
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print what would be removed; remove nothing")
	return cmd
}

// gcStores opens what gc reads and cleans.
func gcStores(ctx context.Context, g *globals, js jetstream.JetStream) (retention.Stores, error) {
	var s retention.Stores
	var err error
	missing := func(what, name string, err error) error {
		if errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound) {
			return fmt.Errorf("%s %s does not exist (has a worker started with --prefix %s?)", what, name, g.names.Prefix())
		}
		return fmt.Errorf("%s %s: %w", what, name, err)
	}
	if s.State, err = js.KeyValue(ctx, g.names.StateBucket()); err != nil {
		return s, missing("state bucket", g.names.StateBucket(), err)
	}
	if s.Cache, err = js.KeyValue(ctx, g.names.CacheBucket()); err != nil {
		return s, missing("cache bucket", g.names.CacheBucket(), err)
	}
	if s.Blobs, err = js.ObjectStore(ctx, g.names.BlobStore()); err != nil {
		return s, missing("blob store", g.names.BlobStore(), err)
	}
	if s.Audit, err = js.Stream(ctx, g.names.AuditStream()); err != nil {
		return s, missing("audit stream", g.names.AuditStream(), err)
	}
	return s, nil
}

// printGC prints one line per item, then the totals.
func printGC(g *globals, rep retention.Report) {
	removedVerb := "removed"
	if rep.DryRun {
		removedVerb = "would remove"
	}
	tw := tabwriter.NewWriter(g.stdout, 0, 4, 2, ' ', 0)
	for _, it := range rep.Items {
		what := "kept"
		if it.Removed {
			what = removedVerb
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s old\t%s\n", what, it.Kind, it.Name, days(it.Age), it.Why)
	}
	_ = tw.Flush()
	fmt.Fprintf(g.stdout, "%s: %d task keys, %d workflow keys, %d blobs\n", removedVerb,
		rep.Removed(retention.KindTask), rep.Removed(retention.KindWorkflow), rep.Removed(retention.KindBlob))
}

// days writes an age to the day, or to the minute below a day.
func days(d time.Duration) string {
	if d >= 24*time.Hour {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.Round(time.Minute).String()
}

// gcEvery runs gc every serve --gc-interval until ctx ends. A failed run
// is logged and retried at the next tick; several workers may run it, as
// every removal is conditional or idempotent.
func gcEvery(ctx context.Context, g *globals, nc *nats.Conn, f serveFlags) {
	js, err := jetstream.New(nc)
	if err != nil {
		g.log.Warn("gc: off", "err", err)
		return
	}
	tick := time.NewTicker(f.gcInterval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		stores, err := gcStores(ctx, g, js)
		if err == nil {
			var rep retention.Report
			rep, err = retention.Run(ctx, stores, f.gc.options(g, false))
			g.log.Info("gc: done", "task_keys", rep.Removed(retention.KindTask), "workflow_keys", rep.Removed(retention.KindWorkflow), "blobs", rep.Removed(retention.KindBlob))
		}
		if err != nil && ctx.Err() == nil {
			g.log.Warn("gc failed; next try at the next interval", "every", f.gcInterval, "err", err)
		}
	}
}
