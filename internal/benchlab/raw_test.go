package benchlab

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/bench"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
)

// The raw phases' streams, buckets and consumer have the settings of
// Drover's own, whose cost per message the server's work depends on: a
// tasks stream with message schedules and the retry subject, a filtered
// consumer with Drover's deliveries, a cache bucket with Drover's TTL.
func TestRawPhasesHaveDroversSettings(t *testing.T) {
	srv := natstest.Server(t)
	_, js := natstest.Connect(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cfg := phaseConfig(t, srv.ClientURL())
	res := natstest.Provision(t, ctx, js, broker.Settings{Names: cfg.Names})
	drover, err := broker.EnsureConsumer(ctx, js, cfg.Names, bench.Queue, broker.ConsumerSettings{}, natstest.Quiet())
	require.NoError(t, err)

	r := newTaskPhase(cfg, newDataMaker(cfg), "contract-ops (overlapped)", "opsx", nil)
	r.js = js
	defer r.remove(context.Background())
	cons, err := r.create(ctx)
	require.NoError(t, err)

	stream := func(name string) jetstream.StreamConfig {
		st, err := js.Stream(ctx, name)
		require.NoError(t, err)
		return st.CachedInfo().Config
	}
	// same compares two streams' settings and, unless they are buckets'
	// (named after them), the shapes of their subjects.
	same := func(ours, theirs jetstream.StreamConfig, bucket bool) {
		t.Helper()
		assert.Equal(t, theirs.Retention, ours.Retention)
		assert.Equal(t, theirs.Storage, ours.Storage)
		assert.Equal(t, theirs.Duplicates, ours.Duplicates)
		assert.Equal(t, theirs.AllowMsgSchedules, ours.AllowMsgSchedules)
		assert.Equal(t, theirs.AllowRollup, ours.AllowRollup)
		assert.Equal(t, theirs.DenyDelete, ours.DenyDelete)
		assert.Equal(t, theirs.DenyPurge, ours.DenyPurge)
		assert.Equal(t, theirs.AllowDirect, ours.AllowDirect)
		assert.Equal(t, theirs.MaxAge, ours.MaxAge)
		assert.Equal(t, theirs.MaxMsgsPerSubject, ours.MaxMsgsPerSubject)
		require.Len(t, ours.Subjects, len(theirs.Subjects))
		for i := range ours.Subjects {
			if bucket {
				break
			}
			_, tail, _ := strings.Cut(theirs.Subjects[i], ".")
			assert.True(t, strings.HasSuffix(ours.Subjects[i], tail), "%s, like %s", ours.Subjects[i], theirs.Subjects[i])
		}
	}
	tasks := res.Tasks.CachedInfo().Config
	require.True(t, tasks.AllowMsgSchedules, "Drover's tasks stream allows schedules")
	same(stream(r.tasks), tasks, false)
	same(stream(r.audit), res.Audit.CachedInfo().Config, false)
	for i, kv := range []jetstream.KeyValue{res.State, res.Cache} {
		theirs, err := kv.Status(ctx)
		require.NoError(t, err)
		ours, err := r.kv[i].Status(ctx)
		require.NoError(t, err)
		assert.Equal(t, theirs.TTL(), ours.TTL(), kv.Bucket())
		assert.Equal(t, theirs.History(), ours.History(), kv.Bucket())
		same(stream("KV_"+r.buckets[i]), stream("KV_"+kv.Bucket()), true)
	}

	ours, theirs := cons.CachedInfo().Config, drover.CachedInfo().Config
	assert.Equal(t, r.taskSubj, ours.FilterSubject)
	assert.True(t, strings.HasSuffix(ours.FilterSubject, strings.TrimPrefix(theirs.FilterSubject, cfg.Names.Prefix())))
	assert.Equal(t, theirs.DeliverPolicy, ours.DeliverPolicy)
	assert.Equal(t, theirs.AckPolicy, ours.AckPolicy)
	assert.Equal(t, theirs.AckWait, ours.AckWait)
	assert.Equal(t, theirs.MaxDeliver, ours.MaxDeliver)
	assert.Equal(t, theirs.MaxAckPending, ours.MaxAckPending)
}
