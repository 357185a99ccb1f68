package cli

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/bench"
	"github.com/droverhq/drover/internal/broker"
)

func init() { register(newBenchCmd) }

// newBenchCmd is `drover bench`: Drover's throughput and latency against
// the raw JetStream floor of the same per-task path.
func newBenchCmd(g *globals) *cobra.Command {
	var (
		tasks, concurrency int
		latency, cached    int
		agents             int
		agentLatency       time.Duration
		syncFlag, profile  string
		memProfile         string
		profileDir         string
		rounds             int
		asJSON, keep       bool
		timeout            time.Duration
	)
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Measure tasks/s and latency of no-latency sim tasks against the raw JetStream floor",
		Long: `bench runs N cold, one-round, no-latency sim tasks through an in-process
worker and reports tasks/s and submit-to-terminal p50/p99 latency. In the same
run, on the same server, it measures the raw JetStream floor of the same
per-task path (consume, one KV get and put, one audit publish, ack, with the
same pool size) and prints Drover's throughput as a share of it, with the
stored writes per task, per stream. Another phase, contract-ops, performs the
JetStream operations Drover performs for each task (the state read, a cache
lookup and put per role, three state writes, five fenced audit events with the
contract's headers, the ack), with the sizes Drover's encoders make and cache
keys of the contract's shape (<role>.<64 hex digits>, spread as a sha256's
are), fed the requests a producer publishes, but none of Drover's own work:
how much of the gap to the floor is Drover's code and how much the contract's
operations. The minimal worker is overlapped contract-ops with each task's
data made for real, by Drover's own encoders and sim but none of its pipeline
(the requests decoded strictly, the three roles' results, cache keys and
entries, the five events with their headers and hash-chain links, the three
states with their outboxes): Drover's ratio to it is what the pipeline costs,
its ratio to contract-ops what the data costs.

The floor and contract-ops are "overlapped": they overlap what a careful
hand-written worker would (asynchronous publishes and KV writes in flight
together, waiting only where correctness needs the answer: the task is
acked only once its audit event is stored, a CAS state write completes
before the one that depends on its revision), so the floor is an honest
one. Each raw phase prints a per-operation latency breakdown. With
--rounds N the phases run N times and the report is the round with the
median ratio of Drover to overlapped contract-ops, with every round's
ratios, their ranges and medians, and a confidence interval of each median
(two order statistics of the rounds, the sign test's interval: 95% or more
from six rounds, the range's 93.75% from five): on a machine whose speed
drifts, one round says little. --profile-dir writes a CPU profile of each
phase of the first round, to compare where the phases spend their CPU. The
Drover, contract-ops and floor phases report their CPU, heap allocations
per task and garbage collections (the
whole process's, an embedded server's included); the Drover phase and the
first raw phase each follow an untimed warm-up, which takes the start-up
and the clean-up of the phase before, and every timed phase starts from a
collected heap, with none of the embedded server's message-block buffers
left pooled by the phase before.

The latency phase (--latency-tasks) submits cold tasks one at a time to an
idle worker and reports the time from one role's runner returning to the
next one's starting, and from submit to the planner's runner starting
(p50/p99). The cached phase (--cached-tasks) runs unchanged tasks twice,
fed and followed through the wire contract, and reports the second, fully
cached run's wall time and stored writes per task, next to a fully cached
contract-ops phase: the contract's operations for as many cached tasks (the
claim read with the planner's lookup, three cache hits, one state write,
five fenced events, the ack) with none of Drover's code. With fsync before
ack on the embedded server it times the store's disk too (serial 1 KiB
writes, each fsync'd) and prints the least time the audit stream needs to
store the cached run's events one after another.

The agents phase (--agents N, last) asks how many agents one worker
drives: N cold tasks submitted together to a worker with a pool slot for
each, every planner held until the last one has started, then every
role's sim runner waiting a time of its own (spread over half to one and
a half times --agent-latency across the tasks). It reports how long the
fleet took to start, the run's time against the start and the longest
task's waits alone, the live heap per agent with the fleet started and at
the run's peak, goroutines per agent (the whole process's), CPU per task,
and the role-to-role and submit-to-planner-start times with the whole
fleet in flight.

Without --nats-url it embeds a server in a temporary directory with the
--sync interval and removes it afterwards. Run it once with --sync always
(fsync before ack, serve's default) and once with --sync 2m (nats-server's
default) to see both. Against an external server, --sync is the server's
own.

The bench's streams, buckets and subjects are its own: prefix drover_bench
unless --prefix (or DROVER_PREFIX) names another, so it writes nothing into
a deployment's audit stream, state or cache. It refuses a prefix a
deployment uses (an audit stream with events of other workflows, a task
stream with other consumers or queues). Against an external server it
deletes its streams and buckets after the run, its audit stream included
(deny-delete and deny-purge protect the stream's messages, not the stream),
unless --keep.`,
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
				Agents: agents, AgentLatency: agentLatency,
			}
			if f := cmd.Flag("prefix"); f != nil && f.Changed { // else the bench's own default
				cfg.Names = g.names
			}
			if tasks <= 0 || concurrency <= 0 {
				return fmt.Errorf("--tasks and --concurrency must be positive (got %d and %d)", tasks, concurrency)
			}
			if rounds < 1 {
				return fmt.Errorf("--rounds must be at least 1 (got %d)", rounds)
			}
			cfg.Rounds = rounds
			if latency < 0 || cached < 0 {
				return fmt.Errorf("--latency-tasks and --cached-tasks must not be negative (got %d and %d)", latency, cached)
			}
			if agents < 0 || agents > bench.MaxAgents {
				return fmt.Errorf("--agents must be 0 to %d (got %d)", bench.MaxAgents, agents)
			}
			if agents > 0 && agentLatency <= 0 {
				return fmt.Errorf("--agent-latency must be positive (got %s)", agentLatency)
			}
			if profileDir != "" {
				switch fi, err := os.Stat(profileDir); {
				case err != nil:
					return fmt.Errorf("--profile-dir: %w", err)
				case !fi.IsDir():
					return fmt.Errorf("--profile-dir %s: not a directory", profileDir)
				}
				cfg.ProfileDir = profileDir
			}
			for _, pf := range []struct {
				flag, path string
				out        *io.Writer
			}{{"--cpuprofile", profile, &cfg.CPUProfile}, {"--memprofile", memProfile, &cfg.MemProfile}} {
				if pf.path == "" {
					continue
				}
				f, err := os.Create(pf.path)
				if err != nil {
					return fmt.Errorf("%s: %w", pf.flag, err)
				}
				defer func() { _ = f.Close() }() // a profile; the run reports its own errors
				*pf.out = f
			}
			rep, err := bench.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			if asJSON {
				return rep.WriteJSON(g.stdout)
			}
			if err := rep.WriteText(g.stdout); err != nil {
				return err
			}
			if profile != "" {
				fmt.Fprintf(g.stdout, "\nCPU profile of the drover phase: %s (go tool pprof -top %s)\n", profile, profile)
			}
			if profileDir != "" {
				drover := filepath.Join(profileDir, "drover.pprof")
				if profile != "" {
					drover = profile
				}
				fmt.Fprintf(g.stdout, "\nCPU profiles of the first round's phases: %s (go tool pprof -top -diff_base %s %s)\n",
					filepath.Join(profileDir, "*.pprof"), filepath.Join(profileDir, "minimal-worker.pprof"), drover)
			}
			if memProfile != "" {
				fmt.Fprintf(g.stdout, "allocation profile up to the end of the drover phase: %s (go tool pprof -sample_index=alloc_space -top %s)\n", memProfile, memProfile)
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.IntVar(&tasks, "tasks", bench.DefaultTasks, "number of tasks (and of floor messages)")
	f.IntVar(&concurrency, "concurrency", bench.DefaultConcurrency, "pool size of the worker and of the floor")
	f.IntVar(&latency, "latency-tasks", bench.DefaultLatencyTasks, "tasks of the latency phase, one at a time on an idle worker (0: skip it)")
	f.IntVar(&cached, "cached-tasks", bench.DefaultCachedTasks, "unchanged tasks of the cached phase, run twice (0: skip it)")
	f.IntVar(&agents, "agents", 0, "tasks of the agents phase, all in flight at once on one worker (0: skip it)")
	f.DurationVar(&agentLatency, "agent-latency", bench.DefaultAgentLatency, "mean wait of a role's runner in the agents phase, spread over half to one and a half times it")
	f.StringVar(&syncFlag, "sync", "always", `embedded server's fsync: "always" (before every ack) or an interval such as 2m (nats-server's default)`)
	f.IntVar(&rounds, "rounds", 1, "run the drover, contract-ops, minimal worker and floor phases this many times and report the round with the median ratio, the range, and a confidence interval of the median (95% from six rounds)")
	f.StringVar(&profile, "cpuprofile", "", "write a CPU profile of the drover phase to this file")
	f.StringVar(&profileDir, "profile-dir", "", "write a CPU profile of each phase of the first round (and of the cached contract-ops phase) to this existing directory, a file per phase named after it: drover.pprof (unless --cpuprofile), contract-ops-overlapped.pprof, ...")
	f.StringVar(&memProfile, "memprofile", "", "write an allocation profile of the drover phase to this file")
	f.BoolVar(&asJSON, "json", false, "print the report as JSON")
	f.BoolVar(&keep, "keep", false, "keep the bench's streams and buckets on an external server after the run")
	f.DurationVar(&timeout, "timeout", bench.DefaultTimeout, "give up on a phase after this long")
	return cmd
}
