// Package tune reads role durations and failures from the audit stream and
// recommends role timeouts and max_attempts per task type.
//
// Rules:
//   - A role's durations are the duration_ms of its successful, uncached
//     events (a cache hit costs nothing and says nothing about the runner).
//   - A role's timeout is its Options.Percentile duration over every type
//     (nearest rank) times Options.Headroom, rounded up to a readable
//     unit (see Readable) and never below MinTimeout.
//   - A type's max_attempts is the smallest n such that at least 95% of its
//     completed tasks needed n rounds or fewer, plus one, within 1 to
//     subjects.MaxMaxAttempts. Fewer than LowConfidence completed tasks
//     mark it as low confidence.
//   - A task's type is the "type" of its request, read from its
//     task_accepted event (default "task").
package tune

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/subjects"
)

// Defaults and bounds of the recommendations.
const (
	DefaultPercentile = 99.0
	DefaultHeadroom   = 1.5
	// MinTimeout is the shortest timeout recommended.
	MinTimeout = 30 * time.Second
	// RoundsQuantile is the share of completed tasks max_attempts covers.
	RoundsQuantile = 95.0
	// LowConfidence is the number of completed tasks below which a type's
	// max_attempts is flagged as low confidence.
	LowConfidence = 20
)

// Options select the history and shape the recommendations.
type Options struct {
	// Since starts at the first event stored at or after it (zero: the
	// whole stream).
	Since time.Time
	// Workflow limits the history to one workflow ("" means all).
	Workflow string
	// Percentile of the role durations a timeout covers, in (0, 100]
	// (0 means 99).
	Percentile float64
	// Headroom multiplies that percentile, at least 1 (0 means 1.5).
	Headroom float64
}

func (o Options) withDefaults() (Options, error) {
	if o.Percentile == 0 {
		o.Percentile = DefaultPercentile
	}
	if o.Headroom == 0 {
		o.Headroom = DefaultHeadroom
	}
	if !(o.Percentile > 0 && o.Percentile <= 100) {
		return o, fmt.Errorf("percentile %g: want more than 0 and at most 100", o.Percentile)
	}
	if !(o.Headroom >= 1) {
		return o, fmt.Errorf("headroom %g: want 1 or more", o.Headroom)
	}
	return o, nil
}

// taskKey names one task.
type taskKey struct{ workflow, task string }

// history is what one pass over the audit stream collected, before the
// tasks' types are known for certain.
type history struct {
	events, undecodable int
	types               map[taskKey]string
	durations           []observation // successful, uncached role runs
	failures            []observation // task_retried events
	verdicts            []observation // judge verdicts (reject set)
	ends                []observation // task_completed and task_failed
}

// observation is one event's contribution, attached to its task.
type observation struct {
	key     taskKey
	role    subjects.Role
	ms      int64
	round   int
	timeout bool // a task_retried that timed out
	reject  bool // a judge verdict that rejected
	done    bool // task_completed (else task_failed)
}

// Analyze reads the history opts select in one pass over the audit stream
// and returns the statistics and recommendations. A task whose
// task_accepted event lies before Since has its type read by one direct
// get of that event's subject.
func Analyze(ctx context.Context, js jetstream.JetStream, names subjects.Names, opts Options) (*Report, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("tune: %w", err)
	}
	h := &history{types: map[taskKey]string{}}
	q := audit.Query{Workflow: opts.Workflow, Since: opts.Since}
	if err := audit.Replay(ctx, js, names, q, func(r audit.Record) error { h.add(r); return nil }); err != nil {
		return nil, fmt.Errorf("tune: %w", err)
	}
	if err := h.resolveTypes(ctx, js, names); err != nil {
		return nil, fmt.Errorf("tune: %w", err)
	}
	return build(h, opts), nil
}

// add takes one audit record into the history.
func (h *history) add(r audit.Record) {
	h.events++
	if r.Err != nil {
		h.undecodable++
		return
	}
	e := r.Event
	k := taskKey{e.WorkflowID, e.TaskID}
	o := observation{key: k, role: subjects.Role(e.Actor), round: e.Attempt}
	switch e.EventType {
	case subjects.EventTaskAccepted:
		h.types[k] = requestType(e.Input)
	case subjects.EventPlannerDecision, subjects.EventImplementerChange, subjects.EventJudgeVerdict:
		if e.EventType == subjects.EventJudgeVerdict {
			o.reject = e.Action == subjects.VerdictReject
			h.verdicts = append(h.verdicts, o)
		}
		if e.Status == subjects.StatusSuccess && !e.Cached && o.role.Valid() {
			o.ms = e.DurationMS
			h.durations = append(h.durations, o)
		}
	case subjects.EventTaskRetried:
		o.timeout = strings.Contains(e.Error, "timed out")
		h.failures = append(h.failures, o)
	case subjects.EventTaskCompleted, subjects.EventTaskFailed:
		o.done = e.EventType == subjects.EventTaskCompleted
		h.ends = append(h.ends, o)
	}
}

// requestType is the "type" of a request body, or the default type.
func requestType(input json.RawMessage) string {
	var req struct {
		Type string `json:"type"`
	}
	if json.Unmarshal(input, &req) != nil || req.Type == "" {
		return subjects.DefaultTaskType
	}
	return req.Type
}

// resolveTypes reads the task_accepted event of each task seen without it
// (it lies before Since) by subject; a task without one gets the default
// type.
func (h *history) resolveTypes(ctx context.Context, js jetstream.JetStream, names subjects.Names) error {
	var stream jetstream.Stream
	for _, list := range [][]observation{h.durations, h.failures, h.verdicts, h.ends} {
		for _, o := range list {
			if _, ok := h.types[o.key]; ok {
				continue
			}
			if stream == nil {
				var err error
				if stream, err = js.Stream(ctx, names.AuditStream()); err != nil {
					return err
				}
			}
			subj := names.AuditSubject(o.key.workflow, o.key.task, subjects.ActorSystem, subjects.EventTaskAccepted)
			m, err := stream.GetLastMsgForSubject(ctx, subj)
			switch {
			case errors.Is(err, jetstream.ErrMsgNotFound):
				h.types[o.key] = subjects.DefaultTaskType
			case err != nil:
				return fmt.Errorf("task_accepted of %s/%s: %w", o.key.workflow, o.key.task, err)
			default:
				var e subjects.AuditEvent
				_ = json.Unmarshal(m.Data, &e) // an undecodable event leaves the default type
				h.types[o.key] = requestType(e.Input)
			}
		}
	}
	return nil
}
