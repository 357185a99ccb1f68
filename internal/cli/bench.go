package cli

import (
	"fmt"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/bench"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/workspace"
)

// newBenchCmd is `drover bench`: the throughput and latency of no-op tasks
// through a real worker on the server it is given.
func newBenchCmd(g *globals) *cobra.Command {
	var (
		tasks, concurrency int
		latency, cached    int
		agents             int
		agentLatency       time.Duration
		syncFlag           string
		asJSON, keep       bool
		timeout            time.Duration
		ws                 workspace.Config
		wsTasks            int
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure tasks/s and latency of no-latency sim tasks through a real worker",
		Long: `bench runs N cold, one-round, no-latency sim tasks through an in-process
worker and reports tasks/s and submit-to-terminal p50/p99 latency (each task
timed from its submit to its terminal event read from the audit stream), the
process's CPU and allocations per task, and the stored writes per task, per
stream. It runs after an untimed warm-up of up to 300 tasks.

The latency phase (--latency-tasks) submits cold tasks one at a time to an
idle worker and reports the time from one role's runner returning to the
next one's starting, and from submit to the planner's runner starting
(p50/p99): the figures drover serve exports as drover_role_gap_seconds and
drover_submit_to_start_seconds. The cached phase (--cached-tasks) runs
unchanged tasks twice and reports the second, fully cached run's wall time
and stored writes per task; with fsync before ack on the embedded server it
times the store's disk too (serial 1 KiB writes, each fsync'd).

The agents phase (--agents N, last) asks how many agents one worker
drives: N cold tasks submitted together to a worker with a pool slot for
each, every planner held until the last one has started, then every
role's sim runner waiting a time of its own (spread over half to one and
a half times --agent-latency across the tasks). It reports how long the
fleet took to start, the run's time against the start and the longest
task's waits alone, the live heap and goroutines per agent, CPU per task,
and the role-to-role and submit-to-planner-start times with the whole
fleet in flight.

The workspace phase (--workspace-repo, a URL or a path; first, as it needs
no server) measures a task's workspace overhead on that repository with the
worker's workspace manager: the mirror's first clone, then for each of
--workspace-tasks tasks the worktree's open at the base (--workspace-base-ref,
default the remote's default branch), a line appended to one file committed
and recorded with its patch, and the release (p50/p99 of each), and the
repository's size. It never pushes: nothing is written to the repository.
The mirror is in a temporary directory removed afterwards, unless
--workspace-dir (not a running worker's).

Without --nats-url it embeds a server in a temporary directory with the
--sync interval and removes it afterwards. Against an external server,
--sync is the server's own.

The bench's streams, buckets and subjects are its own: prefix drover_bench
unless --prefix (or DROVER_PREFIX) names another, so it writes nothing into
a deployment's audit stream, state or cache. It refuses a prefix a
deployment uses. Against an external server it deletes its streams and
buckets after the run, unless --keep.

Drover's throughput next to raw JetStream on the same server (the floor,
contract-ops, the minimal worker) is measured by the lab, a go test
benchmark outside the binary: see docs/performance.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			sync, err := broker.ParseSync(syncFlag)
			if err != nil {
				return fmt.Errorf("--sync %w", err)
			}
			var opts []nats.Option // credentials and TLS: for an external server only
			if g.natsURL != "" {
				if opts, err = g.natsOptions(); err != nil {
					return err
				}
			}
			cfg := bench.Config{
				Tasks: tasks, Concurrency: concurrency, URL: g.natsURL, Options: opts, Sync: sync,
				Timeout: timeout, Log: g.log, Keep: keep, LatencyTasks: latency, CachedTasks: cached,
				Agents: agents, AgentLatency: agentLatency, Workspace: ws, WorkspaceTasks: wsTasks,
			}
			if f := cmd.Flag("prefix"); f != nil && f.Changed { // else the bench's own default
				cfg.Names = g.names
			}
			if tasks <= 0 || concurrency <= 0 {
				return fmt.Errorf("--tasks and --concurrency must be positive (got %d and %d)", tasks, concurrency)
			}
			if latency < 0 || cached < 0 {
				return fmt.Errorf("--latency-tasks and --cached-tasks must not be negative (got %d and %d)", latency, cached)
			}
			if agents < 0 || agents > bench.MaxAgents {
				return fmt.Errorf("--agents must be 0 to %d (got %d)", bench.MaxAgents, agents)
			}
			if wsTasks <= 0 {
				return fmt.Errorf("--workspace-tasks must be positive (got %d)", wsTasks)
			}
			if agents > 0 && agentLatency <= 0 {
				return fmt.Errorf("--agent-latency must be positive (got %s)", agentLatency)
			}
			rep, err := bench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return rep.WriteJSON(g.stdout)
			}
			return rep.WriteText(g.stdout)
		},
	}
	f := cmd.Flags()
	f.IntVar(&tasks, "tasks", bench.DefaultTasks, "number of tasks")
	f.IntVar(&concurrency, "concurrency", bench.DefaultConcurrency, "pool size of the worker")
	f.IntVar(&latency, "latency-tasks", bench.DefaultLatencyTasks, "tasks of the latency phase, one at a time on an idle worker (0: skip it)")
	f.IntVar(&cached, "cached-tasks", bench.DefaultCachedTasks, "unchanged tasks of the cached phase, run twice (0: skip it)")
	f.IntVar(&agents, "agents", 0, "tasks of the agents phase, all in flight at once on one worker (0: skip it)")
	f.DurationVar(&agentLatency, "agent-latency", bench.DefaultAgentLatency, "mean wait of a role's runner in the agents phase, spread over half to one and a half times it")
	f.StringVar(&ws.Repo, "workspace-repo", "", "repository (URL or path) of the workspace phase, never pushed to (empty: skip it)")
	f.StringVar(&ws.BaseRef, "workspace-base-ref", "", "branch, tag or commit the workspace phase's tasks start from (default: the remote's default branch)")
	f.StringVar(&ws.Dir, "workspace-dir", "", "directory of the workspace phase's mirror and worktrees (default: a temporary one, removed)")
	f.IntVar(&wsTasks, "workspace-tasks", bench.DefaultWorkspaceTasks, "tasks of the workspace phase, one at a time")
	f.StringVar(&syncFlag, "sync", "always", `embedded server's fsync: "always" (before every ack) or an interval such as 2m (nats-server's default)`)
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&keep, "keep", false, "keep the bench's streams and buckets on an external server after the run")
	f.DurationVar(&timeout, "timeout", bench.DefaultTimeout, "give up on a phase after this long")
	return cmd
}
