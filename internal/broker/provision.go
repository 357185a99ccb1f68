package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/backoff"
	"github.com/droverhq/drover/subjects"
)

// Defaults of Settings.
const (
	DefaultDuplicateWindow = 2 * time.Minute
	DefaultCacheTTL        = 24 * time.Hour
	// DefaultLessonsPerType is how many lessons the lessons stream keeps per
	// task type; older ones age out.
	DefaultLessonsPerType = 100
	// DefaultLessonsMaxAge is how long the lessons stream keeps a lesson.
	DefaultLessonsMaxAge = 90 * 24 * time.Hour
	// DefaultDLQMaxAge is how long the DLQ stream keeps an entry.
	DefaultDLQMaxAge = 30 * 24 * time.Hour
	// DefaultLiveMaxAge is how long the live stream keeps an agent's
	// activity line.
	DefaultLiveMaxAge = 24 * time.Hour
	// DefaultLiveMaxBytes bounds the live stream's size; past it the
	// oldest lines are discarded.
	DefaultLiveMaxBytes = 256 << 20
	// DefaultLivePerTask is how many live lines the stream keeps per task.
	DefaultLivePerTask = 10000
	// liveMaxMsgSize bounds one live line on the wire: its text is at most
	// subjects.MaxLiveText, with room for the other fields.
	liveMaxMsgSize = 16 << 10
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
	// LessonsMaxAge is how long the lessons stream keeps a lesson (its
	// MaxAge, default 90 days; negative: for ever, until LessonsPerType
	// newer ones push it out).
	LessonsMaxAge time.Duration
	// DLQMaxAge is how long the DLQ stream keeps an entry (its MaxAge,
	// default 30 days; negative: for ever). An entry older than this can
	// no longer be listed or redriven.
	DLQMaxAge time.Duration
	// DLQMaxMsgs is how many entries the DLQ stream keeps (its MaxMsgs,
	// default 0: no limit but DLQMaxAge); past it the oldest is discarded.
	DLQMaxMsgs int64
	// LiveMaxAge is how long the live stream keeps an agent's activity
	// line (its MaxAge, default 24h).
	LiveMaxAge time.Duration
	// LiveMaxBytes bounds the live stream (its MaxBytes, default 256 MiB);
	// past it the oldest lines are discarded.
	LiveMaxBytes int64
	// LivePerTask is how many lines of one task the live stream keeps (its
	// MaxMsgsPerSubject, default 10000); older ones are discarded.
	LivePerTask int
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
	case s.DLQMaxMsgs < 0:
		return s, fmt.Errorf("settings: DLQ max messages %d is negative", s.DLQMaxMsgs)
	case s.LiveMaxAge < 0:
		return s, fmt.Errorf("settings: live max age %s is negative", s.LiveMaxAge)
	case s.LiveMaxBytes < 0:
		return s, fmt.Errorf("settings: live max bytes %d is negative", s.LiveMaxBytes)
	case s.LivePerTask < 0:
		return s, fmt.Errorf("settings: live lines per task %d is negative", s.LivePerTask)
	}
	if s.LiveMaxAge == 0 {
		s.LiveMaxAge = DefaultLiveMaxAge
	}
	if s.LiveMaxBytes == 0 {
		s.LiveMaxBytes = DefaultLiveMaxBytes
	}
	if s.LivePerTask == 0 {
		s.LivePerTask = DefaultLivePerTask
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
	s.LessonsMaxAge = ageLimit(s.LessonsMaxAge, DefaultLessonsMaxAge)
	s.DLQMaxAge = ageLimit(s.DLQMaxAge, DefaultDLQMaxAge)
	for _, a := range []struct {
		name string
		age  time.Duration
	}{{"DLQ max age", s.DLQMaxAge}, {"lessons max age", s.LessonsMaxAge}, {"live max age", s.LiveMaxAge}} {
		if a.age > 0 && a.age < s.DuplicateWindow { // the server refuses it
			return s, fmt.Errorf("settings: %s %s is shorter than the duplicate window %s", a.name, a.age, s.DuplicateWindow)
		}
	}
	return s, nil
}

// ageLimit is a stream's MaxAge for a setting: def when it is zero, none
// (0) when it is negative.
func ageLimit(d, def time.Duration) time.Duration {
	switch {
	case d == 0:
		return def
	case d < 0:
		return 0
	}
	return d
}

// Resources are the streams and buckets of one deployment.
type Resources struct {
	Tasks, Audit, DLQ, Lessons, Live jetstream.Stream
	State, Cache                     jetstream.KeyValue
	Blobs                            jetstream.ObjectStore
}

// Provision creates the streams and buckets of the contract where missing
// and returns them. It is idempotent and safe to run from many workers at
// once: they all end up with the same single copy of each.
//
// An existing audit stream is checked, never changed; if it is weaker than
// the contract allows, Provision fails with an error wrapping
// ErrAuditWeakened. The cache bucket's TTL, the duplicate windows of the
// task, DLQ and lessons streams, the DLQ's and the lessons' limits (age,
// messages, lessons per subject) and the lessons stream's subjects are
// updated to s, and each change is logged to log (slog.Default() if nil).
// The audit stream has no limits, by design, and gets none.
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
	if r.Tasks, err = p.tasksStream(ctx); err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if r.DLQ, err = p.limitedStream(ctx, p.dlqConfig()); err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if r.Lessons, err = p.limitedStream(ctx, p.lessonsConfig()); err != nil {
		return nil, fmt.Errorf("provision: %w", err)
	}
	if r.Live, err = p.limitedStream(ctx, p.liveConfig()); err != nil {
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

// tasksConfig is the tasks stream: the requests of every queue, and the
// retries workers schedule (message schedules, which need roll-ups).
func (p *provisioner) tasksConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              p.s.Names.TasksStream(),
		Subjects:          []string{p.s.Names.TasksWildcard(), p.s.Names.TasksRetryWildcard()},
		Retention:         jetstream.WorkQueuePolicy,
		Storage:           jetstream.FileStorage,
		Replicas:          p.s.Replicas,
		Duplicates:        p.s.DuplicateWindow,
		AllowMsgSchedules: true,
		AllowRollup:       true,
	}
}

// tasksStream creates or gets the tasks stream (see stream) and adds what
// a stream of an older version lacks: the retry subject and message
// schedules.
func (p *provisioner) tasksStream(ctx context.Context) (jetstream.Stream, error) {
	cfg := p.tasksConfig()
	st, err := p.stream(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cur := st.CachedInfo().Config
	if slices.Equal(cur.Subjects, cfg.Subjects) && cur.AllowMsgSchedules {
		return st, nil
	}
	old := cur.Subjects
	cur.Subjects, cur.AllowMsgSchedules, cur.AllowRollup, cur.DenyPurge = cfg.Subjects, true, true, false
	if st, err = p.js.UpdateStream(ctx, cur); err != nil {
		return nil, fmt.Errorf("stream %s: allow scheduled retries: %w", cfg.Name, err)
	}
	p.log.Info("stream setting changed", "stream", cfg.Name, "setting", "subjects, allow_msg_schedules", "old", old, "new", cfg.Subjects)
	return st, nil
}

// dlqConfig is the DLQ stream: entries age out after DLQMaxAge, and the
// oldest is discarded past DLQMaxMsgs.
func (p *provisioner) dlqConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:       p.s.Names.DLQStream(),
		Subjects:   []string{p.s.Names.DLQWildcard()},
		Retention:  jetstream.LimitsPolicy,
		Storage:    jetstream.FileStorage,
		Replicas:   p.s.Replicas,
		Duplicates: p.s.DuplicateWindow,
		MaxAge:     p.s.DLQMaxAge,
		MaxMsgs:    noLimit(p.s.DLQMaxMsgs),
	}
}

// noLimit is a stream's count limit for a setting: the server's -1 (none)
// for 0.
func noLimit(n int64) int64 {
	if n <= 0 {
		return -1
	}
	return n
}

// lessonsConfig is the lessons stream: one subject per task type and
// workflow (and the legacy one per type), of which the stream keeps the
// most recent LessonsPerType messages for at most LessonsMaxAge (older ones
// age out). Direct gets are allowed so any client can read a subject's
// last lesson cheaply.
func (p *provisioner) lessonsConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              p.s.Names.LessonsStream(),
		Subjects:          []string{p.s.Names.LessonsWildcard()},
		Retention:         jetstream.LimitsPolicy,
		Storage:           jetstream.FileStorage,
		Replicas:          p.s.Replicas,
		Duplicates:        p.s.DuplicateWindow,
		MaxAge:            p.s.LessonsMaxAge,
		MaxMsgs:           -1,
		MaxMsgsPerSubject: int64(p.s.LessonsPerType),
		AllowDirect:       true,
	}
}

// liveConfig is the live stream: agents' activity while their roles run,
// kept LivePerTask lines per task for at most LiveMaxAge and LiveMaxBytes
// in all, the oldest discarded first. It is a window on what is running,
// not a record: the audit stream is.
func (p *provisioner) liveConfig() jetstream.StreamConfig {
	return jetstream.StreamConfig{
		Name:              p.s.Names.LiveStream(),
		Subjects:          []string{p.s.Names.LiveWildcard()},
		Retention:         jetstream.LimitsPolicy,
		Discard:           jetstream.DiscardOld,
		Storage:           jetstream.FileStorage,
		Replicas:          p.s.Replicas,
		Duplicates:        p.s.DuplicateWindow,
		MaxAge:            p.s.LiveMaxAge,
		MaxBytes:          p.s.LiveMaxBytes,
		MaxMsgs:           -1,
		MaxMsgsPerSubject: int64(p.s.LivePerTask),
		MaxMsgSize:        liveMaxMsgSize,
	}
}

// limitedStream creates or gets the stream cfg describes, reconciles its
// duplicate window (see stream), then its subjects and limits: MaxAge,
// MaxMsgs and MaxMsgsPerSubject. Each change is logged.
func (p *provisioner) limitedStream(ctx context.Context, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	st, err := p.stream(ctx, cfg)
	if err != nil {
		return nil, err
	}
	cur := st.CachedInfo().Config
	type change struct {
		setting  string
		old, new any
	}
	var changes []change
	if !slices.Equal(cur.Subjects, cfg.Subjects) {
		changes = append(changes, change{"subjects", cur.Subjects, cfg.Subjects})
		cur.Subjects = cfg.Subjects
	}
	if cur.MaxAge != cfg.MaxAge {
		changes = append(changes, change{"max_age", cur.MaxAge, cfg.MaxAge})
		cur.MaxAge = cfg.MaxAge
	}
	if cur.MaxMsgs != cfg.MaxMsgs {
		changes = append(changes, change{"max_msgs", cur.MaxMsgs, cfg.MaxMsgs})
		cur.MaxMsgs = cfg.MaxMsgs
	}
	if cur.MaxBytes != cfg.MaxBytes && cfg.MaxBytes != 0 {
		changes = append(changes, change{"max_bytes", cur.MaxBytes, cfg.MaxBytes})
		cur.MaxBytes = cfg.MaxBytes
	}
	if cur.MaxMsgsPerSubject != cfg.MaxMsgsPerSubject && cfg.MaxMsgsPerSubject != 0 {
		changes = append(changes, change{"max_msgs_per_subject", cur.MaxMsgsPerSubject, cfg.MaxMsgsPerSubject})
		cur.MaxMsgsPerSubject = cfg.MaxMsgsPerSubject
	}
	if len(changes) == 0 {
		return st, nil
	}
	if st, err = p.js.UpdateStream(ctx, cur); err != nil {
		return nil, fmt.Errorf("stream %s: update %v: %w", cfg.Name, changes, err)
	}
	for _, c := range changes {
		p.log.Info("stream setting changed", "stream", cfg.Name, "setting", c.setting, "old", c.old, "new", c.new)
	}
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
	st, err := CreateStream(ctx, js, cfg)
	if errors.Is(err, jetstream.ErrStreamNameAlreadyInUse) {
		st, err = js.Stream(ctx, cfg.Name)
	}
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", cfg.Name, err)
	}
	return st, nil
}

// ErrStoreFailed is the server's "error creating store for stream"
// (JSStreamCreateErrF wrapping JSStreamStoreFailedF). A server answers it
// for the first stream created in an account right after its last stream
// was deleted: deleting a stream removes the account's emptied stream
// directory in the background, racing with the create's mkdir.
const ErrStoreFailed jetstream.ErrorCode = 10049

// isAPIError reports whether err is, or wraps, the server's API error
// code.
func isAPIError(err error, code jetstream.ErrorCode) bool {
	var apiErr *jetstream.APIError
	return errors.As(err, &apiErr) && apiErr.ErrorCode == code
}

// storeTries bounds the creates CreateStream tries while the server
// answers ErrStoreFailed.
const storeTries = 5

// CreateStream is js.CreateStream, tried again with a short backoff (up to
// storeTries times) while the server answers ErrStoreFailed.
func CreateStream(ctx context.Context, js jetstream.JetStream, cfg jetstream.StreamConfig) (jetstream.Stream, error) {
	policy := backoff.Policy{Base: 50 * time.Millisecond, Max: time.Second}
	for try := 1; ; try++ {
		st, err := js.CreateStream(ctx, cfg)
		if try == storeTries || !isAPIError(err, ErrStoreFailed) {
			return st, err
		}
		if err := backoff.Sleep(ctx, policy.Delay(try)); err != nil {
			return nil, err
		}
	}
}
