package lessons_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/lessons"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

var names = subjects.MustNames(subjects.DefaultPrefix)

// testBundle is one embedded server with the streams provisioned.
type testBundle struct {
	tb  testing.TB
	js  jetstream.JetStream
	now *clock
}

func setup(tb testing.TB) *testBundle {
	tb.Helper()
	_, _, js, _ := natstest.Provisioned(tb, natstest.Sync(time.Minute))
	return &testBundle{tb: tb, js: js, now: &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}}
}

func (tb *testBundle) book(opts lessons.Config) *lessons.Book {
	opts.Now = tb.now.Now
	book, err := lessons.New(lessons.Deps{JS: tb.js, Names: names, Log: natstest.Quiet()}, opts)
	require.NoError(tb.tb, err)
	return book
}

// clock is a settable clock for the cache.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }

func (c *clock) Add(d time.Duration) { c.mu.Lock(); c.t = c.t.Add(d); c.mu.Unlock() }

// lesson is the i-th rejection of a task of type ty.
func lesson(ty string, i int) subjects.Lesson {
	return subjects.Lesson{
		Type: ty, Role: subjects.RoleJudge, Workflow: "wf", Task: fmt.Sprintf("%s-%d", ty, i), Attempt: 1,
		Kind: "rejected", What: "the judge rejected attempt 1", Feedback: fmt.Sprintf("feedback %d", i),
		EventID: subjects.EventID("wf", fmt.Sprintf("%s-%d", ty, i), 1, "judge", subjects.EventJudgeVerdict, 0),
	}
}

func feedbacks(ls []subjects.Lesson) []string {
	out := make([]string, len(ls))
	for i, l := range ls {
		out[i] = l.Feedback
	}
	return out
}

func TestRecordThenLookupNewestLast(t *testing.T) {
	t.Parallel()
	b := setup(t)
	book := b.book(lessons.Config{})
	ctx := context.Background()
	for i := range 7 {
		book.Record(ctx, lesson("feature", i))
	}
	got, err := book.Lookup(ctx, "feature", "wf", 3)
	require.NoError(t, err)
	require.Equal(t, []string{"feedback 4", "feedback 5", "feedback 6"}, feedbacks(got))
	require.Equal(t, b.now.Now(), got[0].Time, "a zero time is recorded as now")

	all, err := book.Lookup(ctx, "feature", "wf", 0)
	require.NoError(t, err)
	require.Len(t, all, 7)

	none, err := book.Lookup(ctx, "never-seen", "wf", 5)
	require.NoError(t, err)
	require.Empty(t, none)
}

func TestLookupIsPerType(t *testing.T) {
	t.Parallel()
	b := setup(t)
	book := b.book(lessons.Config{})
	ctx := context.Background()
	for i := range 4 {
		book.Record(ctx, lesson("feature", i))
		book.Record(ctx, lesson("docs", 10+i))
	}
	book.Record(ctx, lesson("a.b*c", 99)) // escaped into one subject token

	docs, err := book.Lookup(ctx, "docs", "", 10)
	require.NoError(t, err)
	require.Equal(t, []string{"feedback 10", "feedback 11", "feedback 12", "feedback 13"}, feedbacks(docs))
	odd, err := book.Lookup(ctx, "a.b*c", "wf", 10)
	require.NoError(t, err)
	require.Equal(t, []string{"feedback 99"}, feedbacks(odd))

	var types []string
	require.NoError(t, book.List(ctx, "", func(l subjects.Lesson) error { types = append(types, l.Type); return nil }))
	require.Equal(t, []string{"feature", "docs", "feature", "docs", "feature", "docs", "feature", "docs", "a.b*c"}, types)
}

func TestRecordDedupesByEventID(t *testing.T) {
	t.Parallel()
	b := setup(t)
	book := b.book(lessons.Config{})
	ctx := context.Background()
	l := lesson("feature", 1)
	book.Record(ctx, l)
	book.Record(ctx, l) // a redelivery within the duplicate window
	st, err := b.js.Stream(ctx, names.LessonsStream())
	require.NoError(t, err)
	require.Equal(t, uint64(1), st.CachedInfo().State.Msgs)
	m, err := st.GetLastMsgForSubject(ctx, names.LessonsWorkflowSubject("feature", "wf"))
	require.NoError(t, err)
	require.Equal(t, "lesson/"+l.EventID, m.Header.Get(jetstream.MsgIDHeader))

	// After the duplicate window a second copy is stored, but read once.
	body, err := json.Marshal(l)
	require.NoError(t, err)
	_, err = b.js.Publish(ctx, names.LessonsWorkflowSubject("feature", "wf"), body)
	require.NoError(t, err)
	got, err := book.Lookup(ctx, "feature", "wf", 5)
	require.NoError(t, err)
	require.Len(t, got, 1)
}

func TestRecentCachesUntilRecordOrTTL(t *testing.T) {
	t.Parallel()
	b := setup(t)
	book := b.book(lessons.Config{PerPrompt: 2, TTL: time.Minute})
	ctx := context.Background()
	require.Empty(t, book.Recent(ctx, "feature", "wf"))

	book.Record(ctx, lesson("feature", 1))
	require.Equal(t, []string{"[judge, attempt 1, rejected] the judge rejected attempt 1: feedback 1"}, book.Recent(ctx, "feature", "wf"))

	// Written behind the Book's back (another worker): not seen until the TTL.
	other := b.book(lessons.Config{})
	other.Record(ctx, lesson("feature", 2))
	require.Len(t, book.Recent(ctx, "feature", "wf"), 1, "served from the cache")
	b.now.Add(time.Minute)
	require.Equal(t, []string{
		"[judge, attempt 1, rejected] the judge rejected attempt 1: feedback 1",
		"[judge, attempt 1, rejected] the judge rejected attempt 1: feedback 2",
	}, book.Recent(ctx, "feature", "wf"))

	// A Record through the Book drops its type's entry at once.
	book.Record(ctx, lesson("feature", 3))
	got := book.Recent(ctx, "feature", "wf")
	require.Len(t, got, 2, "PerPrompt lessons")
	require.Contains(t, got[1], "feedback 3")
}

func TestFormat(t *testing.T) {
	t.Parallel()
	l := subjects.Lesson{Role: subjects.RoleImplementer, Attempt: 2, Kind: "max_deliveries", What: "the implementer\nfailed"}
	require.Equal(t, "[implementer, attempt 2, max_deliveries] the implementer failed", lessons.Format(l))
	l.Feedback = strings.Repeat("x ", 2000)
	require.LessOrEqual(t, len([]rune(lessons.Format(l))), 800)
}

// A lesson is recalled only in the workflow that recorded it, unless the
// Book recalls fleet-wide; lessons on the legacy per-type subject (recorded
// before lessons were scoped) are recalled by the workflow their body
// names, and fleet-wide.
func TestRecallScope(t *testing.T) {
	t.Parallel()
	b := setup(t)
	ctx := context.Background()
	inA := lesson("feature", 1)
	inA.Workflow = "wf-A"
	b.book(lessons.Config{}).Record(ctx, inA)
	legacy := lesson("feature", 2)
	legacy.Workflow = "wf-B"
	body, err := json.Marshal(legacy)
	require.NoError(t, err)
	_, err = b.js.Publish(ctx, names.LessonsSubject("feature"), body)
	require.NoError(t, err)

	tests := []struct {
		scope    lessons.Scope
		workflow string
		want     []string
	}{
		{"", "wf-A", []string{"feedback 1"}},
		{lessons.ScopeWorkflow, "wf-A", []string{"feedback 1"}},
		{lessons.ScopeWorkflow, "wf-B", []string{"feedback 2"}},
		{lessons.ScopeWorkflow, "wf-C", nil},
		{lessons.ScopeFleet, "wf-C", []string{"feedback 1", "feedback 2"}},
	}
	for _, tt := range tests {
		got := b.book(lessons.Config{Scope: tt.scope}).Recent(ctx, "feature", tt.workflow)
		var fbs []string
		for _, l := range got {
			fbs = append(fbs, l[strings.LastIndex(l, ": ")+2:])
		}
		require.Equal(t, tt.want, fbs, "scope %q, workflow %s", tt.scope, tt.workflow)
	}
	m, err := b.js.Stream(ctx, names.LessonsStream())
	require.NoError(t, err)
	last, err := m.GetLastMsgForSubject(ctx, "drover.lessons.feature.wf-A")
	require.NoError(t, err, "recorded on <prefix>.lessons.<type>.<workflow>")
	require.Contains(t, string(last.Data), "feedback 1")

	_, err = lessons.ParseScope("team")
	require.ErrorContains(t, err, `lessons scope "team": want "workflow" or "fleet"`)
}

// New names a missing dependency and an unknown scope.
func TestNewRefusesMissingDependencyAndUnknownScope(t *testing.T) {
	js := struct{ jetstream.JetStream }{}
	_, err := lessons.New(lessons.Deps{Names: names}, lessons.Config{})
	require.ErrorContains(t, err, "Deps.JS")
	_, err = lessons.New(lessons.Deps{JS: js}, lessons.Config{})
	require.ErrorContains(t, err, "Deps.Names")
	_, err = lessons.New(lessons.Deps{JS: js, Names: names}, lessons.Config{Scope: "tenant"})
	require.ErrorContains(t, err, "Config.Scope")
	_, err = lessons.New(lessons.Deps{JS: js, Names: names}, lessons.Config{Scope: lessons.ScopeFleet})
	require.NoError(t, err)
}
