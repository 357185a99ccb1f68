// Package bench measures what a user or operator of Drover feels on their
// own server: the throughput and latency of cold no-op tasks through a
// real worker (the Drover phase), the overhead between roles on an idle
// worker (the latency phase), a cached re-run (the cached phase) and how
// many agents one worker drives (the agents phase), and a task's workspace
// overhead on the operator's repository (the workspace phase). Each task is timed
// from its submit to its terminal event as a follower of the audit stream
// reads it; the role gaps are what the worker's metrics observe.
//
// The lab that compares Drover with raw JetStream (the floor, contract-ops,
// the minimal worker) is internal/benchlab, which the drover binary does
// not link.
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
	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// warmUpTasks is the size of the untimed warm-up before the Drover phase.
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
	// Tasks is the number of tasks of the Drover phase (default 2000).
	Tasks int
	// Concurrency is the worker's pool size (default 16).
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
	// Workspace is the repository of the workspace phase (Repo, BaseRef,
	// Dir; the mirror is in a temporary directory without Dir). Its
	// Repo empty: no workspace phase. Push, setup and cleanup commands
	// and copied files are off in the phase.
	Workspace workspace.Config
	// WorkspaceTasks is the number of tasks of the workspace phase
	// (default DefaultWorkspaceTasks).
	WorkspaceTasks int
	// Timeout bounds each phase (default 10m).
	Timeout time.Duration
	// Log receives progress and the worker's log (default: discarded).
	Log *slog.Logger
}

func (c Config) withDefaults() (Config, error) {
	if c.Tasks < 0 || c.Concurrency < 0 || c.Sync < 0 || c.Timeout < 0 || c.LatencyTasks < 0 || c.CachedTasks < 0 ||
		c.Agents < 0 || c.AgentLatency < 0 || c.WorkspaceTasks < 0 {
		return c, fmt.Errorf("bench: negative setting (tasks %d, concurrency %d, sync %s, timeout %s, latency tasks %d, cached tasks %d, agents %d, agent latency %s, workspace tasks %d)",
			c.Tasks, c.Concurrency, c.Sync, c.Timeout, c.LatencyTasks, c.CachedTasks, c.Agents, c.AgentLatency, c.WorkspaceTasks)
	}
	if c.WorkspaceTasks == 0 {
		c.WorkspaceTasks = DefaultWorkspaceTasks
	}
	if c.AgentLatency == 0 {
		c.AgentLatency = DefaultAgentLatency
	}
	if c.Agents > MaxAgents {
		return c, fmt.Errorf("bench: %d agents: at most %d", c.Agents, MaxAgents)
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

// Run runs the phases and returns the report: after an untimed warm-up,
// the Drover phase, then the latency, cached and agents phases that are
// asked for. The first error of any phase ends the run; every goroutine,
// connection and embedded server it started is stopped before it returns.
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
	// First, as it needs no server: a repository that cannot be cloned
	// ends the run before the long phases.
	if cfg.Workspace.Enabled() {
		if rep.Workspace, err = runWorkspace(ctx, cfg); err != nil {
			return nil, err
		}
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
	// An untimed warm-up: a worker runs warm, and the first phase would
	// otherwise pay for the process's and the server's start (the heap's
	// growth, the stores' first blocks). It keeps the bench's streams for
	// the timed phase, so no deletion runs behind it.
	warm := cfg
	warm.Tasks, warm.Keep = min(cfg.Tasks, warmUpTasks), true
	if _, _, err := runDrover(ctx, warm, url); err != nil {
		return nil, fmt.Errorf("bench: warm-up: %w", err)
	}
	if rep.Drover, rep.Writes, err = runDrover(ctx, cfg, url); err != nil {
		return nil, err
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

// Connect opens a connection of the bench, named for the server's view,
// with opts (credentials and TLS) after the bench's own.
func Connect(url, name string, opts []nats.Option) (*nats.Conn, error) {
	nc, err := nats.Connect(url, append([]nats.Option{nats.Name("drover bench " + name), nats.MaxReconnects(-1)}, opts...)...)
	if err != nil {
		return nil, fmt.Errorf("bench: connect (%s): %w", name, err)
	}
	return nc, nil
}

// ErrTimeout wraps a phase that did not finish in time.
var ErrTimeout = errors.New("bench: phase timed out")
