package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/blobs"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/config"
	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/internal/replay"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// replayFlags are the flags of `drover replay`.
type replayFlags struct {
	as, role, config, prompts, since string
	workspaceDir                     string
	tasks                            []string
	limit, concurrency               int
	timeout                          time.Duration
	json                             bool
}

func newReplayCmd(g *globals) *cobra.Command {
	var f replayFlags
	cmd := &cobra.Command{
		Use:   "replay WORKFLOW",
		Short: "Re-run a recorded workflow from its audit record, or one role of it counterfactually",
		Long: `Re-run a workflow's tasks from their recorded requests under a new workflow (--as,
default "<workflow>-replay-<unix time>") and report, per task, whether the outcome,
the rounds and every role's output match the record.

A replay serves every role from the audit record: it calls no model, also after the
cache entries expired or were cleared. It prints how many runner calls it made (0).

With --role, the re-run is a counterfactual: that role runs again with the runner of
--config (and the templates of --prompts) on exactly the inputs it had (for the
judge: the recorded plan and change); every other role is served from the record.
The report lists the old and new decision per task and sums them up (a judge:
approvals that become rejections and the reverse, the agreement rate; a planner or
implementer: whose output changed). Where the new decision takes a task off its
recorded path (a judge that now rejects a change the original approved), the task
stops there: the record has no next round to serve, so the task fails with
role_failed ("diverged from the record") and the report shows the decision.

The re-run runs in this process, with a worker of its own on a queue of its own
(replay-<hash>), at --concurrency tasks at once. It writes nothing to the original
workflow's record; its tasks carry metadata replay_of, or counterfactual_of and
counterfactual_role, naming what they re-run. --tasks, --limit and --since take a
sample.

With a workspace: block in --config (the fleet's), a task recorded with
workspaces gets a worktree again, and each replayed implementer attempt re-applies
its recorded change (sha256-checked, from the blob store when stored there) instead
of running, so a judge, recorded or counterfactual, judges exactly the recorded
diff; the WORKSPACE column says whether every attempt got the recorded tree. The
re-run never pushes, names its branches from its own workflow, and starts from the
recorded base. Its worktrees are in --workspace-dir (default: a temporary
directory, removed afterwards).`,
		Example: `  drover replay board-T1
  drover replay board-T1 --as board-T1-check --json
  drover replay board-T1 --role judge --config strict-judge.yaml
  drover replay board-T1 --role judge --prompts ./prompts-v2 --limit 100 --since 72h`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runReplay(cmd.Context(), g, f, args[0])
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&f.as, "as", "", `workflow ID of the re-run (default "<workflow>-replay-<unix time>")`)
	fl.StringVar(&f.role, "role", "", "run this role again (planner, implementer or judge): a counterfactual")
	fl.StringVar(&f.config, "config", "", "configuration file whose runner the --role runs with, and whose workspace: block the re-run uses")
	fl.StringVar(&f.workspaceDir, "workspace-dir", "", "directory of the re-run's workspaces (default: a temporary one, removed afterwards)")
	fl.StringVar(&f.prompts, "prompts", "", "directory of prompt templates the --role runs with")
	fl.StringSliceVar(&f.tasks, "tasks", nil, "only these task IDs, comma-separated")
	fl.IntVar(&f.limit, "limit", 0, "at most this many tasks, in the order they were accepted (0: all)")
	fl.StringVar(&f.since, "since", "", "only tasks accepted at or after this RFC 3339 time, or this long ago (e.g. 24h)")
	fl.IntVar(&f.concurrency, "concurrency", 16, "tasks re-run at once")
	fl.DurationVar(&f.timeout, "timeout", 30*time.Minute, "how long to wait for the re-run's tasks")
	fl.BoolVar(&f.json, "json", false, "print the report as JSON")
	return cmd
}

func runReplay(ctx context.Context, g *globals, f replayFlags, wf string) error {
	if err := subjects.ValidateID(wf); err != nil {
		return fmt.Errorf("workflow %q: %w", wf, err)
	}
	if f.concurrency < 1 {
		return fmt.Errorf("--concurrency %d: must be at least 1", f.concurrency)
	}
	if f.limit < 0 {
		return fmt.Errorf("--limit %d: must not be negative", f.limit)
	}
	since, err := parseAuditTime("--since", f.since, time.Now())
	if err != nil {
		return err
	}
	opts := replay.Options{Source: wf, As: f.as, Tasks: f.tasks, Limit: f.limit, Since: since, Timeout: f.timeout, Log: g.log}
	if f.role != "" {
		role := subjects.Role(f.role)
		if !role.Valid() {
			return fmt.Errorf("--role %q: want planner, implementer or judge", f.role)
		}
		set, err := counterfactualRunners(g, f)
		if err != nil {
			return err
		}
		defer func() { _ = set.Close() }() // done with its runners
		opts.Role, opts.Live, opts.LiveCached = role, set.For(role), set.Cached(role)
	} else if f.prompts != "" {
		return errors.New("--prompts chooses the templates of a counterfactual's runner: it needs --role")
	}
	ws, cleanup, err := replayWorkspaceConfig(f)
	if err != nil {
		return err
	}
	defer cleanup()
	c, err := g.connect(ctx, "replay")
	if err != nil {
		return err
	}
	defer c.Close()
	settings, err := currentSettings(ctx, c.js, g)
	if err != nil {
		return err
	}
	if obj, err := c.js.ObjectStore(ctx, g.names.BlobStore()); err == nil {
		opts.Expander = blobs.New(obj)
	}
	opts.Worker = worker.Config{Names: g.names, Concurrency: f.concurrency, Streams: settings, Version: Version,
		Consumer: broker.ConsumerSettings{MaxAckPending: max(broker.DefaultMaxAckPending, f.concurrency)}, Workspace: ws}
	rep, err := replay.Run(ctx, c.nc, opts)
	if err != nil {
		return err
	}
	if f.json {
		enc := json.NewEncoder(g.stdout)
		enc.SetIndent("", "  ")
		return enc.Encode(rep)
	}
	return rep.WriteTable(g.stdout)
}

// replayWorkspaceConfig is the workspace: block of --config (off without
// one) in a directory of the re-run's own: --workspace-dir, else a
// temporary one that cleanup removes.
func replayWorkspaceConfig(f replayFlags) (workspace.Config, func(), error) {
	none := func() {}
	if f.config == "" {
		return workspace.Config{}, none, nil
	}
	file, err := config.Load(f.config)
	if err != nil {
		return workspace.Config{}, none, err
	}
	ws := file.Workspace
	if !ws.Enabled() {
		return workspace.Config{}, none, nil
	}
	if ws.Dir = f.workspaceDir; ws.Dir != "" {
		return ws, none, nil
	}
	if ws.Dir, err = os.MkdirTemp("", "drover-replay-"); err != nil {
		return workspace.Config{}, none, err
	}
	return ws, func() { _ = os.RemoveAll(ws.Dir) }, nil
}

// counterfactualRunners builds the runners of --config and --prompts.
func counterfactualRunners(g *globals, f replayFlags) (runner.Set, error) {
	if f.config == "" && f.prompts == "" {
		return runner.Set{}, errors.New("--role needs the new runner: --config FILE and/or --prompts DIR")
	}
	file := &config.File{}
	if f.config != "" {
		var err error
		if file, err = config.Load(f.config); err != nil {
			return runner.Set{}, err
		}
	}
	dir := f.prompts
	if dir == "" {
		dir = file.PromptsDir
	}
	prompts, err := prompt.Load(dir)
	if err != nil {
		return runner.Set{}, err
	}
	set, err := file.Runners(prompts, runner.NewSim(runner.SimOptions{}), g.auth.Password, g.auth.Token)
	if err != nil {
		return runner.Set{}, fmt.Errorf("config %s: %w", f.config, err)
	}
	return set, nil
}

// currentSettings reads the deployment's stream and bucket settings from
// the server, so that the re-run's worker, which provisions like any
// worker, changes none of them.
func currentSettings(ctx context.Context, js jetstream.JetStream, g *globals) (broker.Settings, error) {
	s := broker.Settings{Names: g.names}
	tasks, err := js.Stream(ctx, g.names.TasksStream())
	if err != nil {
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			return s, fmt.Errorf("stream %s does not exist (has a worker started with --prefix %s?)", g.names.TasksStream(), g.names.Prefix())
		}
		return s, err
	}
	tc := tasks.CachedInfo().Config
	s.DuplicateWindow, s.Replicas = tc.Duplicates, tc.Replicas
	if dlq, err := js.Stream(ctx, g.names.DLQStream()); err == nil {
		dc := dlq.CachedInfo().Config
		s.DLQMaxAge, s.DLQMaxMsgs = forever(dc.MaxAge), max(dc.MaxMsgs, 0)
	}
	if ls, err := js.Stream(ctx, g.names.LessonsStream()); err == nil {
		lc := ls.CachedInfo().Config
		s.LessonsMaxAge, s.LessonsPerType = forever(lc.MaxAge), int(lc.MaxMsgsPerSubject)
	}
	if kv, err := js.KeyValue(ctx, g.names.CacheBucket()); err == nil {
		if st, err := kv.Status(ctx); err == nil {
			s.CacheTTL = st.TTL()
		}
	}
	return s, nil
}

// forever maps a stream's "no age limit" (0) to the settings' negative.
func forever(d time.Duration) time.Duration {
	if d == 0 {
		return -1
	}
	return d
}
