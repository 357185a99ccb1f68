package status

import "time"

// Report is one snapshot of a deployment: its queues, workers, cache and
// audit stream.
type Report struct {
	// At is when the snapshot was taken.
	At      time.Time `json:"at"`
	Prefix  string    `json:"prefix"`
	Queues  []Queue   `json:"queues"`
	Workers []Worker  `json:"workers"`
	Cache   Cache     `json:"cache"`
	Audit   Audit     `json:"audit"`
}

// Queue is one queue's counts, from its consumer and the DLQ stream.
type Queue struct {
	Name string `json:"name"`
	// Pending are requests not yet delivered (the consumer's NumPending).
	Pending uint64 `json:"pending"`
	// InFlight are requests delivered and not yet settled, including
	// those waiting out a retry delay (NumAckPending).
	InFlight int `json:"in_flight"`
	// Redelivered are in-flight requests delivered more than once
	// (NumRedelivered).
	Redelivered int `json:"redelivered"`
	// DeadLettered are the queue's entries in the DLQ stream.
	DeadLettered uint64 `json:"dead_lettered"`
	// Consumer is the durable consumer's name; empty when the queue has
	// dead letters but no consumer.
	Consumer string `json:"consumer,omitempty"`
}

// Worker is one worker found through the micro service: its status
// endpoint's answer, or, if that failed, what its metadata says and the
// error.
type Worker struct {
	WorkerStatus
	// ServiceID is the worker's micro service instance ID.
	ServiceID string `json:"service_id"`
	// Error is set when the worker's status endpoint did not answer.
	Error string `json:"error,omitempty"`
}

// Cache describes the role cache: the bucket's entries and the lookups
// of the workers that answered.
type Cache struct {
	Entries uint64 `json:"entries"`
	Hits    int64  `json:"hits"`
	Misses  int64  `json:"misses"`
	// HitRatio is Hits / (Hits + Misses); absent when there were no
	// lookups.
	HitRatio *float64 `json:"hit_ratio,omitempty"`
}

// Audit describes the audit stream's size.
type Audit struct {
	Messages uint64 `json:"messages"`
	Bytes    uint64 `json:"bytes"`
}
