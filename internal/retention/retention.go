// Package retention is Drover's garbage collector: it removes the task
// state and the blobs that no open task needs any more and that are older
// than their retention. The streams bound themselves (the DLQ and lessons
// streams age out, see broker.Settings); the audit stream is the permanent
// record and is never touched.
//
// What a run removes:
//   - a terminal (completed, failed, cancelled) task's state key
//     "<wf>.<task>" last written more than Options.StateMaxAge ago, and a
//     workflow key "<wf>._" as old once no task key of its workflow is
//     left, unless the workflow is paused;
//   - a blob older than Options.BlobMinAge that no kept state value, no
//     role result in the cache and no audit event refers to;
//   - only when Options.BlobMaxAge is set: a blob older than that even
//     when audit events refer to it, which makes those events' large
//     values unreadable.
//
// What it never removes: the key of an open (running or paused) task, or
// any blob its state refers to (outputs, request, result, outbox events,
// and the cached results its outputs name). The state bucket is read
// first, and a state key is removed only at the revision that was read, so
// a task that moved on meanwhile is kept.
package retention

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// Defaults of Options.
const (
	DefaultStateMaxAge = 30 * 24 * time.Hour
	DefaultBlobMinAge  = 30 * 24 * time.Hour
)

// MinAge is the shortest retention Options accept: a blob still in use is
// written again when it is an hour old (see blobs.Store), so a shorter one
// could remove a blob a task is about to refer to.
const MinAge = 2 * time.Hour

// Stores are what a run reads and cleans.
type Stores struct {
	State jetstream.KeyValue
	Cache jetstream.KeyValue // optional: cached results' blobs are kept
	Blobs jetstream.ObjectStore
	Audit jetstream.Stream
}

// Options tune a run. Zero fields take the defaults noted.
type Options struct {
	// StateMaxAge is how long a terminal task's state (and an idle
	// workflow's) is kept after its last write (default 30 days).
	StateMaxAge time.Duration
	// BlobMinAge is how long a blob is kept after it was last written
	// even when nothing refers to it (default 30 days).
	BlobMinAge time.Duration
	// BlobMaxAge, when set, removes blobs older than this although audit
	// events refer to them: those events' large values can then no longer
	// be read. Zero (the default) keeps every blob the audit stream
	// refers to for ever.
	BlobMaxAge time.Duration
	// DryRun reports what would be removed and removes nothing.
	DryRun bool
	// Now is the clock that ages are measured with (default time.Now).
	Now func() time.Time
	// Log gets a line per removal (default slog.Default()).
	Log *slog.Logger
}

// ErrOptions is wrapped by every invalid Options error.
var ErrOptions = errors.New("retention: invalid options")

// Validate reports whether o is valid, as Run would.
func (o Options) Validate() error {
	_, err := o.withDefaults()
	return err
}

func (o Options) withDefaults() (Options, error) {
	if o.StateMaxAge == 0 {
		o.StateMaxAge = DefaultStateMaxAge
	}
	if o.BlobMinAge == 0 {
		o.BlobMinAge = DefaultBlobMinAge
	}
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"state max age", o.StateMaxAge}, {"blob min age", o.BlobMinAge}, {"blob max age", o.BlobMaxAge}} {
		if f.d != 0 && f.d < MinAge {
			return o, fmt.Errorf("%w: %s %s is shorter than %s", ErrOptions, f.name, f.d, MinAge)
		}
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = slog.Default()
	}
	return o, nil
}

// Kind is what an Item is.
type Kind string

// Kinds of Item.
const (
	KindTask     Kind = "task"
	KindWorkflow Kind = "workflow"
	KindBlob     Kind = "blob"
)

// Item is one thing a run removed or kept, and why.
type Item struct {
	Kind    Kind
	Name    string // the state key or the blob's name
	Removed bool   // false: kept (or, in a dry run, would be kept)
	Why     string
	Age     time.Duration
}

// Report is what a run removed and kept, in the order it decided.
type Report struct {
	DryRun bool
	Items  []Item
}

// Removed counts the items of a kind that were removed.
func (r Report) Removed(k Kind) int {
	n := 0
	for _, it := range r.Items {
		if it.Kind == k && it.Removed {
			n++
		}
	}
	return n
}

// Run removes what Options say is no longer needed; see the package doc.
// It stops at the first error, with what it removed so far in the report.
func Run(ctx context.Context, s Stores, opts Options) (Report, error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return Report{}, err
	}
	r := &run{s: s, opts: opts, now: opts.Now(), rep: Report{DryRun: opts.DryRun}, inUse: map[string]bool{}}
	if err := r.state(ctx); err != nil {
		return r.rep, err
	}
	if err := r.blobs(ctx); err != nil {
		return r.rep, err
	}
	return r.rep, nil
}

// run is one Run's state.
type run struct {
	s     Stores
	opts  Options
	now   time.Time
	rep   Report
	inUse map[string]bool // blobs that kept state or cached results refer to
}

func (r *run) add(it Item) {
	r.rep.Items = append(r.rep.Items, it)
	if it.Removed {
		verb := "removed"
		if r.opts.DryRun {
			verb = "would remove"
		}
		r.opts.Log.Info("gc: "+verb, "kind", it.Kind, "name", it.Name, "why", it.Why, "age", it.Age.Round(time.Second))
	}
}
