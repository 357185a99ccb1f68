// Package bench measures Drover's throughput and latency against the raw
// JetStream floor of the same per-task path, on the same server.
//
// A run has three phases. The Drover phase starts an in-process worker with
// the no-latency sim runner, submits N cold one-round tasks (a fresh
// workflow and scope per task, so no cache entry can hit), times each to
// the moment the worker has its terminal event in the audit stream, checks
// the audit stream for all of them and counts the messages every stream
// stored. The
// floor phase does the least work a worker could do for the same task with
// plain JetStream: consume from a work-queue stream with a pool of the same
// size, one KV get and one KV put, one audit-like publish with a
// Nats-Msg-Id, and an ack. Drover's throughput is reported as a share of the
// floor's. The contract-ops phase performs Drover's own JetStream operations
// for each task, with none of Drover's code (ops.go): the ceiling of any
// implementation of the wire contract on that server. The minimal worker
// makes the same operations with each task's data made for real (work.go):
// what the data costs, apart from what Drover's pipeline costs.
package bench

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"runtime"
	"time"

	"github.com/nats-io/nats.go"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/subjects"
)

// warmUpTasks is the size of the untimed warm-ups before the Drover phase
// and before the raw phases.
const warmUpTasks = 300

// Queue is the queue the bench's tasks go through. A queue of its own keeps
// them away from the workers of a shared server, which consume their own
// queues only.
const Queue = "bench"

// Defaults of Config.
const (
	DefaultTasks       = 2000
	DefaultConcurrency = 16
	DefaultTimeout     = 10 * time.Minute
	// DefaultLatencyTasks and DefaultCachedTasks are drover bench's
	// defaults for Config.LatencyTasks and Config.CachedTasks, whose zero
	// skips the phase.
	DefaultLatencyTasks = 200
	DefaultCachedTasks  = 1000
	// DefaultAgentLatency is the mean wait of a role's runner in the
	// agents phase: seconds, as an agent CLI's calls take, and long
	// enough that a task outlives a heartbeat.
	DefaultAgentLatency = 5 * time.Second
	// MinAgentLatency is the shortest: the sim waits whole milliseconds,
	// and the shortest wait is half the mean.
	MinAgentLatency = 10 * time.Millisecond
	// MaxAgents bounds the agents phase, which one process holds in
	// memory all at once: 10,000 agents took about 700 MiB of RSS here,
	// the embedded server's included.
	MaxAgents = 20000
)

// Config configures a bench run. Zero fields take the defaults noted.
type Config struct {
	// Tasks is the number of tasks of each phase (default 2000).
	Tasks int
	// Concurrency is the pool size of the worker and of the raw phases
	// (default 16).
	Concurrency int
	// URL is the NATS server to measure. Empty starts an embedded server
	// in a temporary directory with Sync, removed after the run.
	URL string
	// Options are the credential and TLS options of the connections to
	// URL (see broker.AuthOptions); they are ignored with the embedded
	// server, which takes none.
	Options []nats.Option
	// Sync is the embedded server's fsync interval: 0 fsyncs before every
	// acknowledgement. It is ignored with URL.
	Sync time.Duration
	// Names are the bench's own names (default prefix DefaultPrefix,
	// "drover_bench"). A prefix whose audit stream holds a deployment's
	// events is refused (ErrDeploymentPrefix).
	Names subjects.Names
	// Keep leaves the Drover phase's streams and buckets on an external
	// server after the run; by default they are deleted. The embedded
	// server's store is always removed.
	Keep bool
	// DataDir is the embedded server's store directory; it must not
	// exist or be empty, and is removed after the run (default: a new
	// temporary directory).
	DataDir string
	// CPUProfile, when set, receives a CPU profile of the Drover phase
	// (the whole process, so an embedded server's work is in it too).
	CPUProfile io.Writer
	// MemProfile, when set, receives the process's allocation profile as
	// the Drover phase ends (the allocations since the process started,
	// which the phase's dominate; the embedded server's included).
	MemProfile io.Writer
	// ProfileDir, when set, is an existing directory that receives a CPU
	// profile of each timed phase of the first round (of the Drover phase
	// unless CPUProfile takes it), a file per phase named after it:
	// drover.pprof, contract-ops-overlapped.pprof, minimal-worker.pprof, ...
	ProfileDir string
	// LatencyTasks is the number of tasks of the latency phase, submitted
	// one at a time to the idle worker (0: no latency phase).
	LatencyTasks int
	// CachedTasks is the number of tasks of the cached phase, run twice,
	// the second time all cache hits (0: no cached phase).
	CachedTasks int
	// Agents is the number of tasks of the agents phase, all in flight at
	// once on one worker with a pool slot for each (0: no agents phase).
	Agents int
	// AgentLatency is the mean wait of a role's runner in the agents
	// phase, spread over [AgentLatency/2, 3*AgentLatency/2] across the
	// tasks (default DefaultAgentLatency).
	AgentLatency time.Duration
	// Rounds is how many times the Drover, contract-ops, minimal worker
	// and floor phases run, one after another (default 1). The report
	// shows the round with the median ratio of Drover to overlapped
	// contract-ops, and the range of the ratios: on a machine whose
	// speed drifts, one round's ratio says little.
	Rounds int
	// Timeout bounds each phase (default 10m).
	Timeout time.Duration
	// Log receives progress and the worker's log (default: discarded).
	Log *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Tasks < 0 || c.Concurrency < 0 || c.Sync < 0 || c.Timeout < 0 || c.LatencyTasks < 0 || c.CachedTasks < 0 || c.Rounds < 0 ||
		c.Agents < 0 || c.AgentLatency < 0 {
		return c, fmt.Errorf("bench: negative setting (tasks %d, concurrency %d, sync %s, timeout %s, latency tasks %d, cached tasks %d, rounds %d, agents %d, agent latency %s)",
			c.Tasks, c.Concurrency, c.Sync, c.Timeout, c.LatencyTasks, c.CachedTasks, c.Rounds, c.Agents, c.AgentLatency)
	}
	if c.AgentLatency == 0 {
		c.AgentLatency = DefaultAgentLatency
	}
	if c.Agents > MaxAgents {
		return c, fmt.Errorf("bench: %d agents: at most %d", c.Agents, MaxAgents)
	}
	if c.Rounds == 0 {
		c.Rounds = 1
	}
	if c.Tasks == 0 {
		c.Tasks = DefaultTasks
	}
	if c.Concurrency == 0 {
		c.Concurrency = DefaultConcurrency
	}
	if c.Timeout == 0 {
		c.Timeout = DefaultTimeout
	}
	if c.Agents > 0 && c.AgentLatency < MinAgentLatency {
		return c, fmt.Errorf("bench: agent latency %s: at least %s, so that every agent waits", c.AgentLatency, MinAgentLatency)
	}
	if c.Agents > 0 && 3*c.AgentLatency*3/2 >= c.Timeout {
		return c, fmt.Errorf("bench: agent latency %s: the longest task's waits (%s) outlast the timeout %s", c.AgentLatency, 3*c.AgentLatency*3/2, c.Timeout)
	}
	if c.Names == (subjects.Names{}) {
		c.Names = subjects.MustNames(DefaultPrefix)
	}
	if c.Log == nil {
		c.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c, nil
}

// runRound runs one round: an untimed warm-up and the Drover phase, then
// an untimed warm-up and the three raw phases (contract-ops, the minimal
// worker, the floor).
func runRound(ctx context.Context, cfg Config, url string, warmUp func() error) (benchRound, error) {
	var (
		rd  benchRound
		err error
	)
	// An untimed warm-up of the Drover phase, as the raw phases get one: a
	// worker runs warm, and the first phase would otherwise pay for the
	// process's and the server's start (the heap's growth, the stores'
	// first blocks). It keeps the bench's streams for the timed phase, so
	// no deletion runs behind it.
	warmDrover := cfg
	warmDrover.Tasks, warmDrover.Keep = min(cfg.Tasks, warmUpTasks), true
	warmDrover.CPUProfile, warmDrover.MemProfile, warmDrover.ProfileDir = nil, nil, ""
	if _, _, err := runDrover(ctx, warmDrover, url); err != nil {
		return rd, fmt.Errorf("bench: warm-up: %w", err)
	}
	if rd.Drover, rd.Writes, err = runDrover(ctx, cfg, url); err != nil {
		return rd, err
	}
	if err := warmUp(); err != nil {
		return rd, err
	}
	for _, ph := range []struct {
		out *Phase
		run func(context.Context, Config, string) (Phase, error)
	}{
		{&rd.OpsOverlapped, runOps},
		{&rd.Minimal, runMinimal},
		{&rd.FloorOverlapped, runFloor},
	} {
		if *ph.out, err = ph.run(ctx, cfg, url); err != nil {
			return rd, err
		}
	}
	return rd, nil
}

// Run runs the phases and returns the report: Rounds rounds of the Drover,
// contract-ops, minimal worker and floor phases, reported by the round
// with the median ratio of Drover to overlapped contract-ops; then, once,
// the latency, cached and agents phases that are asked for. The first
// error of any phase ends the run; every
// goroutine, connection and embedded server it started is stopped before
// it returns.
func Run(ctx context.Context, cfg Config) (*Report, error) {
	cfg, err := cfg.withDefaults()
	if err != nil {
		return nil, err
	}
	rep := &Report{
		Tasks:       cfg.Tasks,
		Concurrency: cfg.Concurrency,
		Sync:        SyncLabel(cfg.Sync),
		Server:      "embedded",
		GoVersion:   runtime.Version(),
		GOMAXPROCS:  runtime.GOMAXPROCS(0),
		NumCPU:      runtime.NumCPU(),
	}
	url, storeDir := cfg.URL, ""
	if url == "" {
		srv, dir, cleanup, err := startServer(cfg)
		if err != nil {
			return nil, err
		}
		defer cleanup()
		url, storeDir = srv.ClientURL(), dir
		cfg.Options = nil
	} else {
		rep.Server, rep.Sync = "external", "the server's own"
		cfg.Log.Warn("benchmarking an external server: other traffic skews the figures", "prefix", cfg.Names.Prefix(), "keep", cfg.Keep)
	}
	// The first phase after another runs while the server still removes
	// the streams of the one before: an untimed warm-up takes that cost,
	// so it does not fall on whichever raw phase comes next.
	warm := cfg
	warm.Tasks, warm.ProfileDir = min(cfg.Tasks, warmUpTasks), ""
	warmUp := func() error {
		if _, err := runOps(ctx, warm, url); err != nil {
			return fmt.Errorf("bench: warm-up: %w", err)
		}
		return nil
	}
	rounds := make([]benchRound, 0, cfg.Rounds)
	for i := range cfg.Rounds {
		rc := cfg
		if i > 0 { // one profile of each phase, the first round's
			rc.CPUProfile, rc.MemProfile, rc.ProfileDir = nil, nil, ""
		}
		rd, err := runRound(ctx, rc, url, warmUp)
		if err != nil {
			return nil, err
		}
		rounds = append(rounds, rd)
	}
	rep.setRounds(rounds)
	// The raw phases' streams are still being removed: the same untimed
	// warm-up takes that cost off the phases that measure what a user
	// feels.
	if cfg.LatencyTasks > 0 || cfg.CachedTasks > 0 || cfg.Agents > 0 {
		if err := warmUp(); err != nil {
			return nil, err
		}
	}
	if cfg.LatencyTasks > 0 {
		if rep.Latency, err = runLatency(ctx, cfg, url); err != nil {
			return nil, err
		}
	}
	if cfg.CachedTasks > 0 {
		if rep.Cached, err = runCached(ctx, cfg, url); err != nil {
			return nil, err
		}
		if storeDir != "" && cfg.Sync == 0 {
			if rep.Cached.Disk, err = probeDisk(storeDir, diskProbeWrites, cfg.CachedTasks); err != nil {
				return nil, err
			}
		}
	}
	// Last, as it is the largest: the phase after it would pay for the
	// removal of its streams.
	if cfg.Agents > 0 {
		if rep.Agents, err = runAgents(ctx, cfg, url); err != nil {
			return nil, err
		}
	}
	rep.finish()
	return rep, nil
}

// diskProbeWrites is how many fsync'd writes the disk probe times.
const diskProbeWrites = 1000

// startServer starts the embedded server of a run and returns its store
// directory and a cleanup that stops it and removes its store.
func startServer(cfg Config) (*broker.Embedded, string, func(), error) {
	dir := cfg.DataDir
	if dir == "" {
		d, err := os.MkdirTemp("", "drover-bench-")
		if err != nil {
			return nil, "", nil, fmt.Errorf("bench: temporary store directory: %w", err)
		}
		dir = d
	} else if entries, err := os.ReadDir(dir); err == nil && len(entries) > 0 {
		return nil, "", nil, fmt.Errorf("bench: store directory %s is not empty; the bench removes it after the run", dir)
	}
	srv, err := broker.StartEmbedded(broker.EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: dir, Sync: cfg.Sync, ServerName: "drover-bench"})
	if err != nil {
		_ = os.RemoveAll(dir)
		return nil, "", nil, fmt.Errorf("bench: %w", err)
	}
	return srv, dir, func() {
		srv.Shutdown()
		if err := os.RemoveAll(dir); err != nil {
			cfg.Log.Warn("could not remove the bench's store", "dir", dir, "err", err)
		}
	}, nil
}

// SyncLabel names an fsync interval as the report shows it.
func SyncLabel(d time.Duration) string {
	if d == 0 {
		return "always (fsync before ack)"
	}
	return "every " + d.String()
}

// connect opens a connection of the bench, named for the server's view,
// with opts (credentials and TLS) after the bench's own.
func connect(url, name string, opts []nats.Option) (*nats.Conn, error) {
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name("drover bench " + name), nats.MaxReconnects(-1)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("bench: connect (%s): %w", name, err)
	}
	return nc, nil
}

// errTimeout wraps a phase that did not finish in time.
var errTimeout = errors.New("bench: phase timed out")
