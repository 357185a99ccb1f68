package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// Defaults of Settings.
const (
	DefaultDuplicateWindow = 2 * time.Minute
	DefaultCacheTTL        = 24 * time.Hour
	// DefaultLessonsPerType is how many lessons the lessons stream keeps per
	// task type; older ones age out.
	DefaultLessonsPerType = 100
)

// Settings are the deployment-wide settings of the streams and buckets.
type Settings struct {
	// Names builds every stream and bucket name; it must come from
	// subjects.NewNames.
	Names subjects.Names
	// Replicas of every stream and bucket on a cluster (0 means 1); a
	// single server always gets 1.
	Replicas int
	// DuplicateWindow of the task, DLQ and lessons streams, and of the
	// audit stream when it is created (default 2m).
	DuplicateWindow time.Duration
	// CacheTTL is how long a cached role result lives (default 24h).
	CacheTTL time.Duration
	// LessonsPerType is how many lessons of one task type the lessons
	// stream keeps (its MaxMsgsPerSubject, default 100): the most recent
	// ones; when a type has more, its oldest lesson is discarded.
	LessonsPerType int
}

// withDefaults validates s and fills in its zero fields.
func (s Settings) withDefaults() (Settings, error) {
	switch {
	case s.Names.Prefix() == "":
		return s, errors.New("settings: Names is the zero value; build it with subjects.NewNames")
	case s.Replicas < 0:
		return s, fmt.Errorf("settings: replicas %d is negative", s.Replicas)
	case s.DuplicateWindow < 0:
		return s, fmt.Errorf("settings: duplicate window %s is negative", s.DuplicateWindow)
	case s.CacheTTL < 0:
		return s, fmt.Errorf("settings: cache TTL %s is negative", s.CacheTTL)
	case s.LessonsPerType < 0:
		return s, fmt.Errorf("settings: lessons per type %d is negative", s.LessonsPerType)
	}
	if s.Replicas == 0 {
		s.Replicas = 1
	}
	if s.DuplicateWindow == 0 {
		s.DuplicateWindow = DefaultDuplicateWindow
	}
	if s.CacheTTL == 0 {
		s.CacheTTL = DefaultCacheTTL
	}
	if s.LessonsPerType == 0 {
		s.LessonsPerType = DefaultLessonsPerType
	}
	return s, nil
}

// Resources are the streams and buckets of one deployment.
type Resources struct {
	Tasks, Audit, DLQ, Lessons jetstream.Stream
	State, Cache               jetstream.KeyValue
	Blobs                      jetstream.ObjectStore
}

// Provision creates the streams and buckets of the contract where missing
// and returns them. It is idempotent and safe to run from many workers at
// once: they all end up with the same single copy of each.
//
// An existing audit stream is checked, never changed; if it is weaker than
// the contract allows, Provision fails with an error wrapping
// ErrAuditWeakened. The cache bucket's TTL, the duplicate windows of the
// task, DLQ and lessons streams, and the lessons kept per type are updated
// to s, and each change is logged to log (slog.Default() if nil).
func Provision(ctx context.Context, js jetstream.JetStream, s Settings, log *slog.Logger) (*Resources, error) {
	s, err := s.withDefaults()
	if err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if log == nil {
		log = slog.Default()
	}
	s.Replicas = Replicas(js, s.Replicas, log)
	p := &provisioner{js: js, s: s, log: log}
	var r Resources
	// The audit stream first: a refused deployment creates nothing else.
	if r.Audit, err = p.auditStream(ctx); err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if r.Tasks, err = p.stream(ctx, p.tasksConfig()); err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if r.DLQ, err = p.stream(ctx, p.dlqConfig()); err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if r.Lessons, err = p.lessonsStream(ctx); err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if r.State, err = p.stateBucket(ctx); err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if r.Cache, err = p.cacheBucket(ctx); err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if r.Blobs, err = p.blobStore(ctx); err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	return &r, nil
}

// provisioner carries what every step of Provision needs.
type provisioner struct {
	js  jetstream.JetStream
	s   Settings
	log *slog.Logger
}

func (p *provisioner) tasksConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:       p.s.Names.TasksStream(),
		Subjects:   []string{p.s.Names.TasksWildcard()},
		Retention:  jetstream.WorkQueuePolicy,
		Storage:    jetstream.FileStorage,
		Replicas:   p.s.Replicas,
		Duplicates: p.s.DuplicateWindow,
	}
}

func (p *provisioner) dlqConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:       p.s.Names.DLQStream(),
		Subjects:   []string{p.s.Names.DLQWildcard()},
		Retention:  jetstream.LimitsPolicy,
		Storage:    jetstream.FileStorage,
		Replicas:   p.s.Replicas,
		Duplicates: p.s.DuplicateWindow,
	}
}

// lessonsConfig is the lessons stream: one subject per task type, of which
// the stream keeps the most recent LessonsPerType messages (older ones age
// out, so the stream's size is bounded by the number of types). Direct gets
// are allowed so any client can read a type's last lesson cheaply.
func (p *provisioner) lessonsConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              p.s.Names.LessonsStream(),
		Subjects:          []string{p.s.Names.LessonsWildcard()},
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.FileStorage,
		Replicas:          p.s.Replicas,
		Duplicates:        p.s.DuplicateWindow,
		MaxMsgsPerSubject: int64(p.s.LessonsPerType),
		AllowDirect:       true,
	}
}

// lessonsStream creates or gets the lessons stream, reconciles its
// duplicate window, then its lessons kept per type.
func (p *provisioner) lessonsStream(ctx context.Context) (jetstream.Stream, error) {
	cfg := p.lessonsConfig()
	st, err := p.stream(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cur := st.CachedInfo().Config
	if cur.MaxMsgsPerSubject == cfg.MaxMsgsPerSubject {
		return st, nil
	}
	old := cur.MaxMsgsPerSubject
	cur.MaxMsgsPerSubject = cfg.MaxMsgsPerSubject
	if st, err = p.js.UpdateStream(ctx, cur); err != nil {
		return nil, fmt.Errorf("stream %s: update lessons per type %d -> %d: %w", cfg.Name, old, cfg.MaxMsgsPerSubject, err)
	}
	p.log.Info("stream setting changed", "stream", cfg.Name, "setting", "max_msgs_per_subject", "old", old, "new", cfg.MaxMsgsPerSubject)
	return st, nil
}

// stream creates the stream cfg describes, or gets the existing one and
// brings its duplicate window to cfg's.
func (p *provisioner) stream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	st, err := createOrGetStream(ctx, p.js, cfg)
	if err != nil {
		return nil, err
	}
	cur := st.CachedInfo().Config
	if cur.Duplicates == cfg.Duplicates {
		return st, nil
	}
	old := cur.Duplicates
	cur.Duplicates = cfg.Duplicates
	if st, err = p.js.UpdateStream(ctx, cur); err != nil {
		return nil, fmt.Errorf("stream %s: update duplicate window %s -> %s: %w", cfg.Name, old, cfg.Duplicates, err)
	}
	p.log.Info("stream setting changed", "stream", cfg.Name, "setting", "duplicate_window", "old", old, "new", cfg.Duplicates)
	return st, nil
}

// createOrGetStream creates a stream, or returns the existing one if the
// name is taken. The server accepts a create with an identical config, so
// concurrent callers with the same config all succeed.
func createOrGetStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	st, err := js.CreateStream(ctx, cfg)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		st, err = js.Stream(ctx, cfg.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", cfg.Name, err)
	}
	return st, nil
}
