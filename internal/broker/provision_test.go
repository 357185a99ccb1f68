package broker

import (
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestProvisionIdempotent(t *testing.T) {
	t.Parallel()
	js := newJS(t)
	ctx := testCtx(t)
	s := Settings{Names: subjects.MustNames("drover")}

	first, err := Provision(ctx, js, s, nil)
	require.NoError(t, err)
	second, err := Provision(ctx, js, s, nil)
	require.NoError(t, err)

	for _, pair := range [][2]jetstream.Stream{{first.Tasks, second.Tasks}, {first.Audit, second.Audit}, {first.DLQ, second.DLQ}} {
		a, b := pair[0].CachedInfo(), pair[1].CachedInfo()
		require.Equal(t, a.Config.Name, b.Config.Name)
		require.Equal(t, a.Created, b.Created, "stream %s was recreated", a.Config.Name)
	}
	require.Equal(t, "DROVER_TASKS", first.Tasks.CachedInfo().Config.Name)
	require.Equal(t, []string{"drover.tasks.*", "drover.tasks.*.retry.>"}, first.Tasks.CachedInfo().Config.Subjects)
	require.True(t, first.Tasks.CachedInfo().Config.AllowMsgSchedules)
	require.Equal(t, jetstream.WorkQueuePolicy, first.Tasks.CachedInfo().Config.Retention)
	require.Equal(t, DefaultDuplicateWindow, first.Tasks.CachedInfo().Config.Duplicates)
	require.Equal(t, []string{"drover.dlq.*"}, first.DLQ.CachedInfo().Config.Subjects)
	require.Equal(t, jetstream.LimitsPolicy, first.DLQ.CachedInfo().Config.Retention)

	audit := first.Audit.CachedInfo().Config
	require.Equal(t, []string{"drover.audit.>"}, audit.Subjects)
	require.True(t, audit.DenyDelete)
	require.True(t, audit.DenyPurge)
	require.False(t, audit.AllowRollup)
	require.False(t, audit.AllowMsgTTL)
	require.NoError(t, checkAudit(audit))

	require.Equal(t, "drover_state", second.State.Bucket())
	require.Equal(t, "drover_cache", second.Cache.Bucket())
	st, err := second.Cache.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, DefaultCacheTTL, st.TTL())
	blobs, err := second.Blobs.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, "drover_blobs", blobs.Bucket())
}

// A tasks stream of an older version (one subject, no message schedules)
// gains the retry subject and message schedules, keeping its messages.
func TestProvisionUpgradesTasksStreamForScheduledRetries(t *testing.T) {
	t.Parallel()
	js := newJS(t)
	ctx := testCtx(t)
	old, err := js.CreateStream(ctx, jetstream.StreamConfig{
		Name: "DROVER_TASKS", Subjects: []string{"drover.tasks.*"}, Retention: jetstream.WorkQueuePolicy,
		Storage: jetstream.FileStorage, Duplicates: DefaultDuplicateWindow,
	})
	require.NoError(t, err)
	_, err = js.Publish(ctx, "drover.tasks.default", []byte(`{}`))
	require.NoError(t, err)

	r, err := Provision(ctx, js, Settings{Names: subjects.MustNames("drover")}, nil)
	require.NoError(t, err)
	info, err := r.Tasks.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, old.CachedInfo().Created, info.Created)
	require.Equal(t, []string{"drover.tasks.*", "drover.tasks.*.retry.>"}, info.Config.Subjects)
	require.True(t, info.Config.AllowMsgSchedules)
	require.Equal(t, uint64(1), info.State.Msgs)
}

func TestProvisionPrefix(t *testing.T) {
	t.Parallel()
	js := newJS(t)
	ctx := testCtx(t)
	r, err := Provision(ctx, js, Settings{Names: subjects.MustNames("other")}, nil)
	require.NoError(t, err)
	require.Equal(t, "OTHER_TASKS", r.Tasks.CachedInfo().Config.Name)
	require.Equal(t, "OTHER_AUDIT", r.Audit.CachedInfo().Config.Name)
	require.Equal(t, "OTHER_DLQ", r.DLQ.CachedInfo().Config.Name)
	require.Equal(t, []string{"other.audit.>"}, r.Audit.CachedInfo().Config.Subjects)
	require.Equal(t, "other_state", r.State.Bucket())
	require.Equal(t, "other_cache", r.Cache.Bucket())
	blobs, err := r.Blobs.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, "other_blobs", blobs.Bucket())
}

func TestProvisionRejectsZeroNames(t *testing.T) {
	t.Parallel()
	_, err := Provision(testCtx(t), nil, Settings{}, nil)
	require.ErrorContains(t, err, "subjects.NewNames")
}

func TestProvisionConcurrent(t *testing.T) {
	t.Parallel()
	e := startServer(t)
	ctx := testCtx(t)
	s := Settings{Names: subjects.MustNames("drover")}

	const workers = 4
	errs := make([]error, workers)
	var wg sync.WaitGroup
	for i := range workers {
		js := connectJS(t, e) // one connection per worker, as in production
		wg.Go(func() { _, errs[i] = Provision(ctx, js, s, nil) })
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "worker %d", i)
	}

	js := connectJS(t, e)
	var names []string
	lister := js.StreamNames(ctx)
	for name := range lister.Name() {
		names = append(names, name)
	}
	require.NoError(t, lister.Err())
	require.ElementsMatch(t, []string{
		"DROVER_TASKS", "DROVER_AUDIT", "DROVER_DLQ", "DROVER_LESSONS", "DROVER_LIVE",
		"KV_drover_state", "KV_drover_cache", "OBJ_drover_blobs",
	}, names)
	_, err := js.KeyValue(ctx, "drover_state")
	require.NoError(t, err)
	_, err = js.KeyValue(ctx, "drover_cache")
	require.NoError(t, err)
	_, err = js.ObjectStore(ctx, "drover_blobs")
	require.NoError(t, err)
}

func TestProvisionRefusesWeakenedAudit(t *testing.T) {
	t.Parallel()
	strong := jetstream.StreamConfig{
		Name: "DROVER_AUDIT", Subjects: []string{"drover.audit.>"}, Storage: jetstream.FileStorage,
		DenyDelete: true, DenyPurge: true,
	}
	cases := []struct {
		name    string
		weaken  func(*jetstream.StreamConfig)
		setting string
	}{
		{"deletable", func(c *jetstream.StreamConfig) { c.DenyDelete = false }, "deny_delete"},
		{"purgeable", func(c *jetstream.StreamConfig) { c.DenyPurge = false }, "deny_purge"},
		{"max age", func(c *jetstream.StreamConfig) { c.MaxAge = time.Hour }, "max_age"},
		{"rollup", func(c *jetstream.StreamConfig) { c.AllowRollup, c.DenyPurge = true, false }, "allow_rollup"}, // the server requires purge for rollups
		{"msg ttl", func(c *jetstream.StreamConfig) { c.AllowMsgTTL = true }, "allow_msg_ttl"},
		{"per subject", func(c *jetstream.StreamConfig) { c.MaxMsgsPerSubject = 10 }, "max_msgs_per_subject"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			js := newJS(t)
			ctx := testCtx(t)
			cfg := strong
			tc.weaken(&cfg)
			_, err := js.CreateStream(ctx, cfg)
			require.NoError(t, err)

			_, err = Provision(ctx, js, Settings{Names: subjects.MustNames("drover")}, nil)
			require.Error(t, err)
			require.ErrorIs(t, err, ErrAuditWeakened, "%v", err)
			require.ErrorContains(t, err, tc.setting)
			require.ErrorContains(t, err, "DROVER_AUDIT")

			_, err = js.Stream(ctx, "DROVER_TASKS")
			require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "a refused deployment creates nothing")
			st, err := js.Stream(ctx, "DROVER_AUDIT")
			require.NoError(t, err)
			require.Equal(t, cfg.DenyDelete, st.CachedInfo().Config.DenyDelete, "the audit stream is never changed")
			require.Equal(t, cfg.MaxAge, st.CachedInfo().Config.MaxAge, "the audit stream is never changed")
		})
	}
}

func TestAuditStreamIsAppendOnly(t *testing.T) {
	t.Parallel()
	js := newJS(t)
	ctx := testCtx(t)
	r, err := Provision(ctx, js, Settings{Names: subjects.MustNames("drover")}, nil)
	require.NoError(t, err)
	ack, err := js.Publish(ctx, "drover.audit.wf.t1.system.task_accepted", []byte(`{}`))
	require.NoError(t, err)

	require.Error(t, r.Audit.DeleteMsg(ctx, ack.Sequence))
	require.Error(t, r.Audit.SecureDeleteMsg(ctx, ack.Sequence))
	require.Error(t, r.Audit.Purge(ctx))
	info, err := r.Audit.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(1), info.State.Msgs)
}

func TestProvisionReconcilesCacheTTLAndDuplicateWindow(t *testing.T) {
	t.Parallel()
	js := newJS(t)
	ctx := testCtx(t)
	names := subjects.MustNames("drover")
	_, err := Provision(ctx, js, Settings{Names: names, CacheTTL: time.Hour, DuplicateWindow: time.Minute}, nil)
	require.NoError(t, err)

	log, logs := newLog()
	r, err := Provision(ctx, js, Settings{Names: names, CacheTTL: 2 * time.Hour, DuplicateWindow: 3 * time.Minute}, log)
	require.NoError(t, err)

	st, err := r.Cache.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, 2*time.Hour, st.TTL())
	for _, s := range []jetstream.Stream{r.Tasks, r.DLQ} {
		info, err := s.Info(ctx)
		require.NoError(t, err)
		require.Equal(t, 3*time.Minute, info.Config.Duplicates, info.Config.Name)
	}
	require.Contains(t, logs.String(), "setting=ttl old=1h0m0s new=2h0m0s")
	require.Contains(t, logs.String(), "stream=DROVER_TASKS setting=duplicate_window old=1m0s new=3m0s")
}

func TestProvisionLessonsStream(t *testing.T) {
	t.Parallel()
	js := newJS(t)
	ctx := testCtx(t)
	names := subjects.MustNames("drover")
	first, err := Provision(ctx, js, Settings{Names: names}, nil)
	require.NoError(t, err)
	cfg := first.Lessons.CachedInfo().Config
	require.Equal(t, "DROVER_LESSONS", cfg.Name)
	require.Equal(t, []string{"drover.lessons.>"}, cfg.Subjects)
	require.Equal(t, DefaultLessonsMaxAge, cfg.MaxAge)
	require.Equal(t, jetstream.LimitsPolicy, cfg.Retention)
	require.Equal(t, jetstream.FileStorage, cfg.Storage)
	require.Equal(t, int64(DefaultLessonsPerType), cfg.MaxMsgsPerSubject)
	require.Equal(t, DefaultDuplicateWindow, cfg.Duplicates)

	again, err := Provision(ctx, js, Settings{Names: names}, nil)
	require.NoError(t, err)
	require.Equal(t, first.Lessons.CachedInfo().Created, again.Lessons.CachedInfo().Created, "the lessons stream was recreated")

	log, logs := newLog()
	r, err := Provision(ctx, js, Settings{Names: names, LessonsPerType: 3}, log)
	require.NoError(t, err)
	info, err := r.Lessons.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, int64(3), info.Config.MaxMsgsPerSubject)
	require.Contains(t, logs.String(), "stream=DROVER_LESSONS setting=max_msgs_per_subject old=100 new=3")

	// The most recent 3 lessons of a type are kept; other types are untouched.
	for i := range 5 {
		_, err := js.Publish(ctx, names.LessonsSubject("feature"), []byte{byte('0' + i)})
		require.NoError(t, err)
	}
	_, err = js.Publish(ctx, names.LessonsSubject("docs"), []byte("d"))
	require.NoError(t, err)
	info, err = r.Lessons.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(4), info.State.Msgs)
	m, err := r.Lessons.GetMsg(ctx, info.State.FirstSeq)
	require.NoError(t, err)
	require.Equal(t, "2", string(m.Data), "the oldest lessons aged out")

	_, err = Provision(ctx, js, Settings{Names: names, LessonsPerType: -1}, nil)
	require.ErrorContains(t, err, "lessons per type -1")
}

// The DLQ and lessons streams get their age and count limits at creation,
// and an existing stream (here as an older Drover created them: no limits,
// lessons on "lessons.*") is brought to the settings, each change logged.
// The audit stream stays unlimited.
func TestProvisionRetentionLimits(t *testing.T) {
	t.Parallel()
	js := newJS(t)
	ctx := testCtx(t)
	names := subjects.MustNames("drover")

	r, err := Provision(ctx, js, Settings{Names: names}, nil)
	require.NoError(t, err)
	dlq := r.DLQ.CachedInfo().Config
	require.Equal(t, DefaultDLQMaxAge, dlq.MaxAge)
	require.Equal(t, int64(-1), dlq.MaxMsgs)
	require.Equal(t, DefaultLessonsMaxAge, r.Lessons.CachedInfo().Config.MaxAge)
	audit := r.Audit.CachedInfo().Config
	require.Zero(t, audit.MaxAge)
	require.Equal(t, int64(-1), audit.MaxMsgs)

	for _, name := range []string{names.DLQStream(), names.LessonsStream()} {
		require.NoError(t, js.DeleteStream(ctx, name))
	}
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: names.DLQStream(), Subjects: []string{names.DLQWildcard()}, Duplicates: DefaultDuplicateWindow})
	require.NoError(t, err)
	_, err = js.CreateStream(ctx, jetstream.StreamConfig{Name: names.LessonsStream(), Subjects: []string{"drover.lessons.*"},
		Duplicates: DefaultDuplicateWindow, MaxMsgsPerSubject: DefaultLessonsPerType, AllowDirect: true})
	require.NoError(t, err)

	log, logs := newLog()
	r, err = Provision(ctx, js, Settings{Names: names, DLQMaxAge: 48 * time.Hour, DLQMaxMsgs: 1000, LessonsMaxAge: 24 * time.Hour}, log)
	require.NoError(t, err)
	info, err := r.DLQ.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, 48*time.Hour, info.Config.MaxAge)
	require.Equal(t, int64(1000), info.Config.MaxMsgs)
	info, err = r.Lessons.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, 24*time.Hour, info.Config.MaxAge)
	require.Equal(t, []string{"drover.lessons.>"}, info.Config.Subjects)
	require.Contains(t, logs.String(), "stream=DROVER_DLQ setting=max_age old=0s new=48h0m0s")
	require.Contains(t, logs.String(), "stream=DROVER_DLQ setting=max_msgs old=-1 new=1000")
	require.Contains(t, logs.String(), "stream=DROVER_LESSONS setting=max_age old=0s new=24h0m0s")
	require.Contains(t, logs.String(), "stream=DROVER_LESSONS setting=subjects")

	// Negative ages lift the limits.
	r, err = Provision(ctx, js, Settings{Names: names, DLQMaxAge: -1, LessonsMaxAge: -1}, nil)
	require.NoError(t, err)
	require.Zero(t, r.DLQ.CachedInfo().Config.MaxAge)
	require.Equal(t, int64(-1), r.DLQ.CachedInfo().Config.MaxMsgs)
	require.Zero(t, r.Lessons.CachedInfo().Config.MaxAge)

	_, err = Provision(ctx, js, Settings{Names: names, DLQMaxAge: time.Minute}, nil)
	require.ErrorContains(t, err, "DLQ max age 1m0s is shorter than the duplicate window 2m0s")
	_, err = Provision(ctx, js, Settings{Names: names, DLQMaxMsgs: -1}, nil)
	require.ErrorContains(t, err, "DLQ max messages -1 is negative")
}
