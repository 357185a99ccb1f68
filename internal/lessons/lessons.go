// Package lessons keeps what rejections and failures taught, per task type
// and workflow, in the <PREFIX>_LESSONS stream, and recalls recent lessons
// for the planner.
//
// Each lesson is a JSON subjects.Lesson on
// "<prefix>.lessons.<type token>.<workflow token>", published with
// "Nats-Msg-Id: lesson/<event_id>", so a redelivered task records its
// lesson once. The stream keeps the most recent lessons of each subject
// (broker.Settings.LessonsPerType, default 100) for at most
// broker.Settings.LessonsMaxAge (default 90 days); older ones age out.
//
// Lessons are text a model wrote, so they are a stored channel into later
// prompts. By default (ScopeWorkflow) a task recalls only the lessons of
// its own workflow and type; ScopeFleet recalls a type's lessons of every
// workflow. A lookup reads only the subjects of its scope (and the legacy
// subject "<prefix>.lessons.<type token>" of lessons recorded before they
// were scoped, whose body names their workflow), so its cost follows the
// number of lessons in scope, never the size of the stream.
package lessons

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

// Defaults of Config.
const (
	DefaultPerPrompt = 5
	DefaultTTL       = 10 * time.Second
)

// Scope is which workflows' lessons a task recalls.
type Scope string

// Scopes of Config.Scope.
const (
	// ScopeWorkflow recalls only the lessons recorded in the task's own
	// workflow (the default).
	ScopeWorkflow Scope = "workflow"
	// ScopeFleet recalls the lessons of the task's type recorded in any
	// workflow.
	ScopeFleet Scope = "fleet"
)

// ParseScope returns the Scope named s: "workflow" or "fleet".
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case ScopeWorkflow, ScopeFleet:
		return Scope(s), nil
	}
	return "", fmt.Errorf("lessons scope %q: want %q or %q", s, ScopeWorkflow, ScopeFleet)
}

// Config tunes a Book. Zero or negative fields take the defaults noted.
type Config struct {
	// Scope is which workflows' lessons Recent recalls (default
	// ScopeWorkflow).
	Scope Scope
	// PerPrompt is how many lessons Recent returns: those in a planner
	// prompt (default 5).
	PerPrompt int
	// TTL is how long Recent serves a type's lessons from memory before it
	// reads them again (default 10s), so a busy worker does not read the
	// stream for every task. A Record through the same Book drops its
	// type's entry at once; lessons recorded by other workers show within
	// TTL.
	TTL time.Duration
	// Now is the cache's clock (default time.Now).
	Now func() time.Time
}

func (o Config) withDefaults() Config {
	if o.Scope == "" {
		o.Scope = ScopeWorkflow
	}
	if o.PerPrompt <= 0 {
		o.PerPrompt = DefaultPerPrompt
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return o
}

// Book records lessons and recalls them. It implements pipeline.Lessons and
// is safe for concurrent use.
type Book struct {
	js    jetstream.JetStream
	names subjects.Names
	log   *slog.Logger
	opts  Config

	mu     sync.Mutex
	stream jetstream.Stream      // the lessons stream, once looked up
	cache  map[string]cacheEntry // Recent's lines by cacheKey
	gen    map[string]uint64     // bumped by Record, per cacheKey
}

// cacheEntry is one type's formatted lessons and when they were read.
type cacheEntry struct {
	lines []string
	at    time.Time
}

// validate names the first setting that cannot work.
func (o Config) validate() error {
	if o.Scope != "" {
		if _, err := ParseScope(string(o.Scope)); err != nil {
			return fmt.Errorf("lessons: Config.Scope: %w", err)
		}
	}
	return nil
}

// Deps are what a Book works with.
type Deps struct {
	// JS reads and publishes lessons; the lessons stream must have been
	// provisioned (broker.Provision). Required.
	JS jetstream.JetStream
	// Names names the stream and subjects; required.
	Names subjects.Names
	// Log is the Book's logger; nil means slog.Default().
	Log *slog.Logger
}

// New returns a Book, or an error naming a missing dependency or a bad
// setting.
func New(deps Deps, cfg Config) (*Book, error) {
	switch {
	case deps.JS == nil:
		return nil, errors.New("lessons: Deps.JS is required")
	case deps.Names.Prefix() == "":
		return nil, errors.New("lessons: Deps.Names is required")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := deps.Log
	if log == nil {
		log = slog.Default()
	}
	return &Book{js: deps.JS, names: deps.Names, log: log, opts: cfg.withDefaults(),
		cache: map[string]cacheEntry{}, gen: map[string]uint64{}}, nil
}

// recordTimeout bounds a Record, which runs on a context that the task's
// end may already have cancelled.
const recordTimeout = 5 * time.Second

// Record publishes l on the subject of its type and workflow and drops the
// cached lessons it belongs to. An empty type is recorded as
// subjects.DefaultTaskType and a zero time as now. A failure is logged,
// never returned: a lost lesson must not fail a task.
func (b *Book) Record(ctx context.Context, l subjects.Lesson) {
	if l.Type == "" {
		l.Type = subjects.DefaultTaskType
	}
	if l.Time.IsZero() {
		l.Time = b.opts.Now().UTC()
	}
	defer b.invalidate(b.cacheKey(l.Type, l.Workflow))
	body, err := json.Marshal(l)
	if err != nil {
		b.log.Warn("lesson not recorded", "type", l.Type, "event_id", l.EventID, "err", err)
		return
	}
	var opts []jetstream.PublishOpt
	if l.EventID != "" {
		opts = append(opts, jetstream.WithMsgID("lesson/"+l.EventID))
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), recordTimeout)
	defer cancel()
	if _, err := b.js.Publish(ctx, b.names.LessonsWorkflowSubject(l.Type, l.Workflow), body, opts...); err != nil {
		b.log.Warn("lesson not recorded", "type", l.Type, "event_id", l.EventID, "err", err)
	}
}

// cacheKey is the key of Recent's cache for a type and workflow: the type
// alone when the scope is the fleet.
func (b *Book) cacheKey(taskType, workflow string) string {
	if b.opts.Scope == ScopeFleet {
		return taskType
	}
	return taskType + "\x00" + workflow
}

// invalidate drops a cache entry, also that of a Recent that is reading it
// right now.
func (b *Book) invalidate(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.cache, key)
	b.gen[key]++
}

// Recent returns the most recent Config.PerPrompt lessons of a type, one
// line each (see Format), newest last: those recorded in workflow, or in
// any workflow when Config.Scope is ScopeFleet. They come from memory when
// read less than Config.TTL ago. A failed read is logged and yields none.
func (b *Book) Recent(ctx context.Context, taskType, workflow string) []string {
	if taskType == "" {
		taskType = subjects.DefaultTaskType
	}
	key := b.cacheKey(taskType, workflow)
	b.mu.Lock()
	e, ok := b.cache[key]
	gen := b.gen[key]
	b.mu.Unlock()
	if ok && b.opts.Now().Sub(e.at) < b.opts.TTL {
		return e.lines
	}
	scope := workflow
	switch {
	case b.opts.Scope == ScopeFleet:
		scope = ""
	case scope == "": // recorded under the reserved token; never fleet-wide
		scope = subjects.Reserved
	}
	got, err := b.Lookup(ctx, taskType, scope, b.opts.PerPrompt)
	if err != nil {
		b.log.Warn("lessons not read; the planner gets none", "type", taskType, "workflow", workflow, "err", err)
		return nil
	}
	lines := make([]string, len(got))
	for i, l := range got {
		lines[i] = Format(l)
	}
	b.mu.Lock()
	if b.gen[key] == gen { // no Record since the read began
		b.cache[key] = cacheEntry{lines: lines, at: b.opts.Now()}
	}
	b.mu.Unlock()
	return lines
}

// Limits of a formatted lesson, so a long feedback cannot flood a prompt.
const (
	maxWhat     = 200
	maxFeedback = 500
)

// Format writes a lesson as one line for a prompt:
// "[judge, attempt 2, rejected] the judge rejected attempt 2: <feedback>".
// White space runs become one space, and long texts are cut.
func Format(l subjects.Lesson) string {
	s := fmt.Sprintf("[%s, attempt %d, %s] %s", l.Role, l.Attempt, l.Kind, redact.ClipRunes(redact.OneLine(l.What), maxWhat))
	if l.Feedback != "" {
		s += ": " + redact.ClipRunes(redact.OneLine(l.Feedback), maxFeedback)
	}
	return s
}
