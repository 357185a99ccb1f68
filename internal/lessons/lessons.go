// Package lessons keeps what rejections and failures taught, per task type,
// in the <PREFIX>_LESSONS stream, and recalls a type's recent lessons for the
// planner.
//
// Each lesson is a JSON subjects.Lesson on "<prefix>.lessons.<type token>",
// published with "Nats-Msg-Id: lesson/<event_id>", so a redelivered task
// records its lesson once. The stream keeps the most recent lessons of each
// type (broker.Settings.LessonsPerType, default 100); older ones age out. A
// lookup reads only its type's subject, so its cost follows the number of
// lessons of that type, never the size of the stream.
package lessons

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// Defaults of Options.
const (
	DefaultPerPrompt = 5
	DefaultTTL       = 10 * time.Second
)

// Options tune a Book. Zero or negative fields take the defaults noted.
type Options struct {
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

func (o Options) withDefaults() Options {
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
	opts  Options

	mu     sync.Mutex
	stream jetstream.Stream      // the lessons stream, once looked up
	cache  map[string]cacheEntry // Recent's lines by task type
	gen    map[string]uint64     // bumped by Record, per task type
}

// cacheEntry is one type's formatted lessons and when they were read.
type cacheEntry struct {
	lines []string
	at    time.Time
}

// New returns a Book on js; the lessons stream must have been provisioned
// (broker.Provision). log defaults to slog.Default().
func New(js jetstream.JetStream, names subjects.Names, log *slog.Logger, opts Options) *Book {
	if log == nil {
		log = slog.Default()
	}
	return &Book{js: js, names: names, log: log, opts: opts.withDefaults(),
		cache: map[string]cacheEntry{}, gen: map[string]uint64{}}
}

// recordTimeout bounds a Record, which runs on a context that the task's
// end may already have cancelled.
const recordTimeout = 5 * time.Second

// Record publishes l on its type's subject and drops the type's cached
// lessons. An empty type is recorded as subjects.DefaultTaskType and a zero
// time as now. A failure is logged, never returned: a lost lesson must not
// fail a task.
func (b *Book) Record(ctx context.Context, l subjects.Lesson) {
	if l.Type == "" {
		l.Type = subjects.DefaultTaskType
	}
	if l.Time.IsZero() {
		l.Time = b.opts.Now().UTC()
	}
	defer b.invalidate(l.Type)
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
	if _, err := b.js.Publish(ctx, b.names.LessonsSubject(l.Type), body, opts...); err != nil {
		b.log.Warn("lesson not recorded", "type", l.Type, "event_id", l.EventID, "err", err)
	}
}

// invalidate drops a type's cached lessons, also those of a Recent that is
// reading them right now.
func (b *Book) invalidate(taskType string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.cache, taskType)
	b.gen[taskType]++
}

// Recent returns the most recent Options.PerPrompt lessons of a type, one
// line each (see Format), newest last. They come from memory when read
// less than Options.TTL ago. A failed read is logged and yields none.
func (b *Book) Recent(ctx context.Context, taskType string) []string {
	if taskType == "" {
		taskType = subjects.DefaultTaskType
	}
	b.mu.Lock()
	e, ok := b.cache[taskType]
	gen := b.gen[taskType]
	b.mu.Unlock()
	if ok && b.opts.Now().Sub(e.at) < b.opts.TTL {
		return e.lines
	}
	got, err := b.Lookup(ctx, taskType, b.opts.PerPrompt)
	if err != nil {
		b.log.Warn("lessons not read; the planner gets none", "type", taskType, "err", err)
		return nil
	}
	lines := make([]string, len(got))
	for i, l := range got {
		lines[i] = Format(l)
	}
	b.mu.Lock()
	if b.gen[taskType] == gen { // no Record since the read began
		b.cache[taskType] = cacheEntry{lines: lines, at: b.opts.Now()}
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
	s := fmt.Sprintf("[%s, attempt %d, %s] %s", l.Role, l.Attempt, l.Kind, oneLine(l.What, maxWhat))
	if l.Feedback != "" {
		s += ": " + oneLine(l.Feedback, maxFeedback)
	}
	return s
}

// oneLine collapses white space and keeps at most n runes.
func oneLine(s string, n int) string {
	s = strings.Join(strings.Fields(s), " ")
	if r := []rune(s); len(r) > n {
		s = string(r[:n-1]) + "…"
	}
	return s
}
