package bench

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// DefaultPrefix is the prefix of the bench's streams, buckets and subjects
// unless Config.Names says otherwise: never a deployment's own, so the
// bench writes nothing into a deployment's audit stream, state or cache.
const DefaultPrefix = "drover_bench"

// workflowPrefix starts the workflow ID of every bench run, which
// checkPrefix recognises in an audit stream.
const workflowPrefix = "bench-"

// NewWorkflowID is a bench run's workflow ID: the prefix and the time.
func NewWorkflowID() string { return fmt.Sprintf("%s%d", workflowPrefix, time.Now().UnixNano()) }

// WorkerName is the worker name of the Drover phase's worker and of the
// minimal worker's data.
const WorkerName = "drover-bench"

// ErrDeploymentPrefix is returned when the bench's prefix is in use by a
// deployment.
var ErrDeploymentPrefix = errors.New("bench: the prefix is a deployment's")

// checkPrefix refuses a prefix a deployment uses, whose streams the bench
// would write into and, after the run, delete: one whose audit stream's
// last event is of a workflow other than a bench run's, or whose task
// stream has a consumer other than the bench's or holds requests of
// another queue. Missing streams, or those a bench run left (--keep), are
// the bench's to use.
func checkPrefix(ctx context.Context, js jetstream.JetStream, names subjects.Names) error {
	refuse := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s; give the bench a prefix of its own (--prefix, default %s)",
			ErrDeploymentPrefix, fmt.Sprintf(format, args...), DefaultPrefix)
	}
	audit, err := js.Stream(ctx, names.AuditStream())
	switch {
	case errors.Is(err, jetstream.ErrStreamNotFound):
	case err != nil:
		return fmt.Errorf("bench: stream %s: %w", names.AuditStream(), err)
	default:
		msg, err := audit.GetLastMsgForSubject(ctx, names.AuditWildcard())
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
		case err != nil:
			return fmt.Errorf("bench: stream %s: last event: %w", names.AuditStream(), err)
		default:
			// <prefix>.audit.<workflow>.<task>.<actor>.<event type>
			wf, _, _ := strings.Cut(strings.TrimPrefix(msg.Subject, names.Prefix()+".audit."), ".")
			if !strings.HasPrefix(wf, workflowPrefix) {
				return refuse("%s holds events of workflow %q", names.AuditStream(), wf)
			}
		}
	}
	tasks, err := js.Stream(ctx, names.TasksStream())
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("bench: stream %s: %w", names.TasksStream(), err)
	}
	lister := tasks.ConsumerNames(ctx)
	for c := range lister.Name() {
		if c != names.Consumer(Queue) {
			return refuse("%s has the consumer %s", names.TasksStream(), c)
		}
	}
	if err := lister.Err(); err != nil {
		return fmt.Errorf("bench: stream %s: consumers: %w", names.TasksStream(), err)
	}
	info, err := tasks.Info(ctx, jetstream.WithSubjectFilter(names.TasksWildcard()))
	if err != nil {
		return fmt.Errorf("bench: stream %s: %w", names.TasksStream(), err)
	}
	for subj, n := range info.State.Subjects {
		if subj != names.TaskSubject(Queue) && n > 0 {
			return refuse("%s holds %d requests on %s", names.TasksStream(), n, subj)
		}
	}
	return nil
}

// removeOwn deletes the streams and buckets the Drover phase provisioned
// under the bench's prefix. The audit stream denies deleting and purging
// its messages, not deleting the whole stream, so it goes too. What cannot
// be deleted is logged.
func removeOwn(ctx context.Context, cfg Config, js jetstream.JetStream) {
	n := cfg.Names
	for _, s := range []string{n.TasksStream(), n.AuditStream(), n.DLQStream(), n.LessonsStream(), n.LiveStream()} {
		if err := js.DeleteStream(ctx, s); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
			cfg.Log.Warn("could not delete a bench stream", "stream", s, "err", err)
		}
	}
	for _, b := range []string{n.StateBucket(), n.CacheBucket()} {
		if err := js.DeleteKeyValue(ctx, b); err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
			cfg.Log.Warn("could not delete a bench bucket", "bucket", b, "err", err)
		}
	}
	if err := js.DeleteObjectStore(ctx, n.BlobStore()); err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) && !errors.Is(err, jetstream.ErrBucketNotFound) {
		cfg.Log.Warn("could not delete a bench object store", "bucket", n.BlobStore(), "err", err)
	}
}
