// Package status collects what `drover status` shows: per queue the
// pending, in-flight, redelivered and dead-lettered counts from JetStream,
// each worker from its NATS micro service, the cache and the audit stream.
// It also defines the micro service every worker registers, so the worker
// (server side) and the collector (client side) share one definition.
package status

import (
	"regexp"
	"strings"
	"time"
)

// The micro service every worker registers. `nats micro ls` lists the
// fleet and `nats micro info drover` shows each worker's metadata and
// status endpoint.
const (
	// ServiceName is the micro service name, whatever the prefix; the
	// metadata key MetaPrefix tells deployments apart.
	ServiceName = "drover"
	// StatusEndpoint is the name of each worker's status endpoint, in the
	// group named after the prefix, on subject
	// "<prefix>.status.<service id>" (see StatusSubject).
	StatusEndpoint = "status"
)

// Metadata keys of the service.
const (
	MetaWorkerID    = "worker_id"
	MetaHost        = "host"
	MetaQueues      = "queues" // comma-separated
	MetaConcurrency = "concurrency"
	MetaPrefix      = "prefix"
	MetaStarted     = "started" // RFC 3339
)

// StatusSubject is the subject of one worker's status endpoint relative to
// its group (the prefix): "status.<service id>". Each worker has its own,
// so a client can ask every worker it discovered.
func StatusSubject(serviceID string) string { return StatusEndpoint + "." + serviceID }

// WorkerStatus is a worker's answer on its status endpoint.
type WorkerStatus struct {
	WorkerID    string    `json:"worker_id"`
	Host        string    `json:"host"`
	Version     string    `json:"version"`
	Concurrency int       `json:"concurrency"`
	InFlight    int64     `json:"in_flight"`
	Started     time.Time `json:"started"`
	UptimeS     float64   `json:"uptime_s"`
	// State is "running" or "draining".
	State  string      `json:"state"`
	Tasks  TaskCounts  `json:"tasks"`
	Cache  CacheCounts `json:"cache"`
	Queues []string    `json:"queues"`
	// Workspaces are the worker's git workspaces; absent when it has none
	// configured.
	Workspaces *WorkspaceCounts `json:"workspaces,omitempty"`
	// Warnings are the readiness checks that pass with a warning, each
	// "name: what" (the sandbox's when it is off); absent when none.
	Warnings []string `json:"warnings,omitempty"`
}

// WorkspaceCounts describe a worker's git workspaces: the worktrees it
// holds now (kept ones included), their disk use with the mirror's, and
// the fetches and pushes it made since it started.
type WorkspaceCounts struct {
	// Worktrees are on disk and not kept (held by a task, or free for
	// reuse); Open are held by a task now; Kept are kept on purpose
	// (failed tasks, with keep_failed).
	Worktrees int   `json:"worktrees"`
	Open      int   `json:"open"`
	Kept      int   `json:"kept"`
	DiskBytes int64 `json:"disk_bytes"`
	Fetches   int64 `json:"fetches"`
	// Pushes are git pushes; PushedRefs the branches they carried (one
	// push carries a batch of branches); PushRetries the pushes that
	// failed for the remote and were tried again.
	Pushes      int64 `json:"pushes"`
	PushedRefs  int64 `json:"pushed_refs"`
	PushRetries int64 `json:"push_retries"`
}

// TaskCounts are the terminal events a worker committed since it started.
type TaskCounts struct {
	Completed int64 `json:"completed"`
	Failed    int64 `json:"failed"`
	Rejected  int64 `json:"rejected"`
	Cancelled int64 `json:"cancelled"`
}

// CacheCounts are a worker's role cache lookups since it started.
type CacheCounts struct {
	Hits   int64 `json:"hits"`
	Misses int64 `json:"misses"`
}

// semver is the SemVer 2.0 grammar the micro package requires of a
// service version.
var semver = regexp.MustCompile(`^(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(?:-((?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*)(?:\.(?:0|[1-9]\d*|\d*[a-zA-Z-][0-9a-zA-Z-]*))*))?(?:\+([0-9a-zA-Z-]+(?:\.[0-9a-zA-Z-]+)*))?$`)

// ServiceVersion turns a build version into the SemVer a micro service
// needs: "v1.2.3" becomes "1.2.3"; anything else, such as "dev", becomes a
// pre-release of 0.0.0 ("0.0.0-dev"). The status endpoint reports the
// version unchanged.
func ServiceVersion(v string) string {
	if s := strings.TrimPrefix(v, "v"); semver.MatchString(s) {
		return s
	}
	pre := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' {
			return r
		}
		return '-'
	}, v)
	if out := "0.0.0-" + pre; semver.MatchString(out) {
		return out
	}
	return "0.0.0-unknown"
}
