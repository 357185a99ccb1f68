package dlq

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/subjects"
)

// ErrNotRedrivable is wrapped by the refusal of an entry whose request would
// only be rejected again: invalid_json, missing_field, invalid_value and
// too_large, or a body that no longer decodes.
var ErrNotRedrivable = errors.New("cannot be redriven")

// maxRedriveN bounds the search for a free "<wf>-redrive-<n>" workflow.
const maxRedriveN = 1000

// RedriveOptions say where redriven requests go.
type RedriveOptions struct {
	// Workflow is the workflow ID every redriven request gets. Empty (the
	// default) gives the requests of each original workflow W the workflow
	// "<W>-redrive-<n>" (W without a "-redrive-<n>" suffix of its own, so a
	// redrive of a redrive counts on instead of nesting), where n is the
	// smallest n >= 1 for which drover_state holds no key "<wf>-redrive-<n>.*".
	// A redrive that no worker has picked up yet has no state, so redriving
	// the same entry again before then picks the same workflow, and the
	// tasks stream stores the request once (producer.Submitted.Duplicate).
	Workflow string
	// Queue is where the requests go; empty (the default) is each entry's
	// own queue.
	Queue string
	// Actor names who redrives, "console:<user>" or "cli:<user>@<host>",
	// for the task_redriven event each redrive records. Redrive requires
	// it (see ValidateActor); Plan ignores it.
	Actor string
}

// Planned is one request a redrive will submit.
type Planned struct {
	// Entry is the DLQ entry it comes from.
	Entry Entry
	// Queue is the queue it goes to.
	Queue string
	// Request is the entry's decoded request with its new workflow ID; the
	// task ID and every other field are kept.
	Request subjects.TaskRequest
}

// Redrivable tells whether an entry with this reason can be redriven: it
// can when the request itself was sound (duplicate_id, workflow_cancelled,
// max_attempts, max_deliveries, role_failed, push_rejected,
// pr_failed, budget_exceeded: a redriven task starts with no spend, under
// the budget its metadata or the config gives; review_expired: it waits for
// a review again). The error wraps ErrNotRedrivable.
func Redrivable(reason string) error {
	switch subjects.Reason(reason) {
	case subjects.ReasonDuplicateID, subjects.ReasonWorkflowCancelled, subjects.ReasonMaxAttempts,
		subjects.ReasonMaxDeliveries, subjects.ReasonRoleFailed, subjects.ReasonPushRejected,
		subjects.ReasonPRFailed, subjects.ReasonBudgetExceeded, subjects.ReasonReviewExpired:
		return nil
	case subjects.ReasonInvalidJSON, subjects.ReasonMissingField, subjects.ReasonInvalidValue, subjects.ReasonTooLarge:
		return fmt.Errorf("%w: the request was rejected as %s and would be rejected again; submit a corrected request instead", ErrNotRedrivable, reason)
	}
	return fmt.Errorf("%w: unknown reason %q", ErrNotRedrivable, reason)
}

// Plan decides what Redrive would submit for entries, without submitting
// anything. It refuses the whole batch, naming every entry at fault, when
// an entry cannot be redriven or two entries would become the same task of
// the same workflow.
func Plan(ctx context.Context, js jetstream.JetStream, names subjects.Names, entries []Entry, opts RedriveOptions) ([]Planned, error) {
	if opts.Workflow != "" {
		if err := subjects.ValidateID(opts.Workflow); err != nil {
			return nil, fmt.Errorf("dlq: redrive: workflow %q: %w", opts.Workflow, err)
		}
	}
	if opts.Queue != "" {
		if err := subjects.ValidateQueue(opts.Queue); err != nil {
			return nil, fmt.Errorf("dlq: redrive: queue: %w", err)
		}
	}
	var (
		out  []Planned
		errs []error
	)
	for _, e := range entries {
		if err := Redrivable(e.Reason); err != nil {
			errs = append(errs, fmt.Errorf("dlq entry %d: %w", e.Seq, err))
			continue
		}
		req, rej := subjects.DecodeTask(e.Body, subjects.Limits{MaxBytes: max(len(e.Body), subjects.DefaultMaxBodyBytes)})
		if rej != nil {
			errs = append(errs, fmt.Errorf("dlq entry %d: %w: its body no longer decodes: %v", e.Seq, ErrNotRedrivable, rej))
			continue
		}
		q := opts.Queue
		if q == "" {
			q = e.Queue
		}
		out = append(out, Planned{Entry: e, Queue: q, Request: req})
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	if err := rename(ctx, js, names, out, opts.Workflow); err != nil {
		return nil, err
	}
	seen := map[[2]string]uint64{}
	for _, p := range out {
		k := [2]string{p.Request.Workflow, p.Request.ID}
		if prev, dup := seen[k]; dup {
			errs = append(errs, fmt.Errorf("dlq entries %d and %d would both become task %s of workflow %s; redrive one of them",
				prev, p.Entry.Seq, p.Request.ID, p.Request.Workflow))
			continue
		}
		seen[k] = p.Entry.Seq
	}
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return out, nil
}

// Redrive submits the requests of entries again under a new workflow (see
// RedriveOptions), keeping each task ID and every other field, with
// producer.Publish. Nothing is submitted if Plan refuses the batch or
// opts.Actor is not valid. The cache makes every role that already
// succeeded free: the same task content under another workflow has the
// same cache keys. Entries stay in the DLQ; each redriven request gets its
// own terminal event (and, if it fails again, its own entry).
//
// Before it publishes a request, Redrive records the decision in the audit
// stream: a task_redriven event by actor human on the original request's
// task (see RedrivenEvent), so the record holds it even when the publish
// then fails; a retried redrive records it once. On an error, Redrive
// returns what it submitted before it.
func Redrive(ctx context.Context, js jetstream.JetStream, names subjects.Names, entries []Entry, opts RedriveOptions) ([]producer.Submitted, error) {
	if err := ValidateActor(opts.Actor); err != nil {
		return nil, err
	}
	plan, err := Plan(ctx, js, names, entries, opts)
	if err != nil {
		return nil, err
	}
	out := make([]producer.Submitted, 0, len(plan))
	if len(plan) == 0 {
		return out, nil
	}
	rec, err := newRecorder(ctx, js, names)
	if err != nil {
		return nil, err
	}
	for _, p := range plan {
		if err := rec.record(ctx, RedrivenEvent(p, opts.Actor, time.Now())); err != nil {
			return out, fmt.Errorf("dlq entry %d: %w (%d of %d submitted before it)", p.Entry.Seq, err, len(out), len(plan))
		}
		s, err := producer.Publish(ctx, js, names, p.Queue, p.Request)
		if err != nil {
			return out, fmt.Errorf("dlq entry %d: %w (%d of %d submitted before it)", p.Entry.Seq, err, len(out), len(plan))
		}
		out = append(out, s)
	}
	return out, nil
}

// redriveSuffix matches the "-redrive-<n>" a previous redrive appended.
var redriveSuffix = regexp.MustCompile(`-redrive-[0-9]+$`)

// BaseWorkflow is wf without a "-redrive-<n>" suffix: the workflow whose
// redrives it counts.
func BaseWorkflow(wf string) string {
	if base := redriveSuffix.ReplaceAllString(wf, ""); base != "" {
		return base
	}
	return wf
}

// rename sets each planned request's workflow: to, or a free
// "<base>-redrive-<n>" per base workflow.
func rename(ctx context.Context, js jetstream.JetStream, names subjects.Names, plan []Planned, to string) error {
	chosen := map[string]string{}
	for i := range plan {
		wf := to
		if wf == "" {
			base := BaseWorkflow(plan[i].Request.Workflow)
			if chosen[base] == "" {
				next, err := nextWorkflow(ctx, js, names, base)
				if err != nil {
					return err
				}
				chosen[base] = next
			}
			wf = chosen[base]
		}
		plan[i].Request.Workflow = wf
	}
	return nil
}

// nextWorkflow returns "<base>-redrive-<n>" for the smallest n >= 1 of which
// drover_state holds no key. Each candidate costs one direct get of the last
// key under "<wf>.>" in the bucket's stream.
func nextWorkflow(ctx context.Context, js jetstream.JetStream, names subjects.Names, base string) (string, error) {
	kvStream := "KV_" + names.StateBucket()
	stream, err := js.Stream(ctx, kvStream)
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return "", fmt.Errorf("dlq: redrive: state bucket %s: %w", names.StateBucket(), err)
	}
	for n := 1; n <= maxRedriveN; n++ {
		wf := base + "-redrive-" + strconv.Itoa(n)
		if err := subjects.ValidateID(wf); err != nil {
			return "", fmt.Errorf("dlq: redrive: workflow %.60q...: %w; name the new workflow yourself", wf, err)
		}
		if stream == nil {
			return wf, nil
		}
		_, err := stream.GetLastMsgForSubject(ctx, "$KV."+names.StateBucket()+"."+subjects.Token(wf)+".>")
		if errors.Is(err, jetstream.ErrMsgNotFound) {
			return wf, nil
		}
		if err != nil {
			return "", fmt.Errorf("dlq: redrive: look up workflow %s: %w", wf, err)
		}
	}
	return "", fmt.Errorf("dlq: redrive: %s-redrive-1 to -%d are all taken; name the new workflow yourself", base, maxRedriveN)
}
