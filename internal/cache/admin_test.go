package cache_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// testBundle is one provisioned embedded server.
type testBundle struct {
	ctx   context.Context
	js    jetstream.JetStream
	names subjects.Names
	res   *broker.Resources
	cache *cache.Cache
	admin *cache.Admin
}

func setup(t *testing.T) *testBundle {
	t.Helper()
	_, _, js, res := natstest.Provisioned(t, natstest.Sync(time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	names := subjects.MustNames("drover")
	quiet := natstest.Quiet()
	return &testBundle{ctx: ctx, js: js, names: names, res: res,
		cache: cache.New(res.Cache, quiet), admin: cache.NewAdmin(js, names)}
}

// key returns a well-formed cache key of role for a name.
func key(role subjects.Role, name string) string {
	sum := sha256.Sum256([]byte(name))
	return subjects.CacheKey(role, hex.EncodeToString(sum[:]))
}

// put stores an entry under k and returns the size of its stored value.
func (b *testBundle) put(t *testing.T, k string) uint64 {
	t.Helper()
	r := runner.Result{Output: json.RawMessage(`{"k":"` + k + `"}`), Action: "done"}
	v, err := json.Marshal(r) // what the pipeline's PutAsync stores
	require.NoError(t, err)
	_, err = b.res.Cache.Put(b.ctx, k, v)
	require.NoError(t, err)
	return uint64(len(v))
}

func roleStats(st cache.Stats, r subjects.Role) cache.RoleStats {
	for _, rs := range st.Roles {
		if rs.Role == r {
			return rs
		}
	}
	return cache.RoleStats{}
}

func TestStatsCountsEntriesAndBytesPerRole(t *testing.T) {
	t.Parallel()
	b := setup(t)
	st, err := b.admin.Stats(b.ctx)
	require.NoError(t, err)
	require.Zero(t, st.Entries)
	require.Len(t, st.Roles, 3)

	want := map[subjects.Role][2]uint64{}
	for i, n := range map[subjects.Role]int{subjects.RolePlanner: 3, subjects.RoleImplementer: 5, subjects.RoleJudge: 2} {
		for j := range n {
			size := b.put(t, key(i, fmt.Sprint(j)))
			w := want[i]
			want[i] = [2]uint64{w[0] + 1, w[1] + size}
		}
	}
	// Overwriting a key adds no entry.
	b.put(t, key(subjects.RolePlanner, "0"))

	st, err = b.admin.Stats(b.ctx)
	require.NoError(t, err)
	require.EqualValues(t, 10, st.Entries)
	var total uint64
	for r, w := range want {
		rs := roleStats(st, r)
		require.Equal(t, w[0], rs.Entries, r)
		require.Equal(t, w[1], rs.Bytes, r)
		total += w[1]
	}
	require.Equal(t, total, st.Bytes)
	require.Greater(t, st.StoredBytes, st.Bytes)
	require.Equal(t, "24h0m0s", st.TTL)
}

func TestInvalidateRoleAndClear(t *testing.T) {
	t.Parallel()
	b := setup(t)
	for i := range 4 {
		for _, r := range subjects.Roles {
			b.put(t, key(r, fmt.Sprint(i)))
		}
	}
	n, err := b.admin.InvalidateRole(b.ctx, subjects.RoleJudge)
	require.NoError(t, err)
	require.EqualValues(t, 4, n)
	st, err := b.admin.Stats(b.ctx)
	require.NoError(t, err)
	require.Zero(t, roleStats(st, subjects.RoleJudge).Entries)
	require.EqualValues(t, 8, st.Entries)
	_, hit := b.cache.Get(b.ctx, key(subjects.RoleJudge, "0"))
	require.False(t, hit)
	_, hit = b.cache.Get(b.ctx, key(subjects.RolePlanner, "0"))
	require.True(t, hit)

	_, err = b.admin.InvalidateRole(b.ctx, "reviewer")
	require.ErrorContains(t, err, `"reviewer"`)

	n, err = b.admin.Clear(b.ctx)
	require.NoError(t, err)
	require.EqualValues(t, 8, n)
	st, err = b.admin.Stats(b.ctx)
	require.NoError(t, err)
	require.Zero(t, st.Entries)
}

func TestInvalidateTaskCoversEveryRound(t *testing.T) {
	t.Parallel()
	b := setup(t)
	const wf, id = "wf.1", "T/1"
	plan, impl1, judge1 := key(subjects.RolePlanner, "p"), key(subjects.RoleImplementer, "i1"), key(subjects.RoleJudge, "j1")
	impl2, judge2 := key(subjects.RoleImplementer, "i2"), key(subjects.RoleJudge, "j2")
	other := key(subjects.RoleImplementer, "other")
	for _, k := range []string{plan, impl1, judge1, impl2, judge2, other} {
		b.put(t, k)
	}
	// The state holds the latest round's keys; the audit events hold every
	// round's.
	_, err := state.New(b.res.State).CreateTask(b.ctx, subjects.TaskState{Workflow: wf, Task: id, State: subjects.StateCompleted,
		Outputs: map[subjects.Role]string{subjects.RolePlanner: plan, subjects.RoleImplementer: impl2, subjects.RoleJudge: judge2}})
	require.NoError(t, err)
	pub := audit.NewPublisher(b.js, b.names)
	for i, ev := range []struct {
		role    subjects.Role
		attempt int
		key     string
	}{{subjects.RolePlanner, 1, plan}, {subjects.RoleImplementer, 1, impl1}, {subjects.RoleJudge, 1, judge1}, {subjects.RoleImplementer, 2, impl2}} {
		in, _ := json.Marshal(map[string]any{"cache_key": ev.key, "attempt": ev.attempt})
		e := &subjects.AuditEvent{EventID: subjects.EventID(wf, id, ev.attempt, subjects.ActorOf(ev.role), subjects.RoleEvent(ev.role), 0),
			EventType: subjects.RoleEvent(ev.role), WorkflowID: wf, TaskID: id, Actor: subjects.ActorOf(ev.role),
			Attempt: ev.attempt, Timestamp: time.Now().UTC(), Input: in, Status: subjects.StatusSuccess}
		_, err := pub.PublishEvent(b.ctx, e, "", false, 0)
		require.NoError(t, err, i)
	}

	inv, err := b.admin.InvalidateTask(b.ctx, wf, id)
	require.NoError(t, err)
	require.ElementsMatch(t, []string{plan, impl1, judge1, impl2, judge2}, inv.Keys)
	require.EqualValues(t, 5, inv.Removed)
	for _, k := range inv.Keys {
		_, hit := b.cache.Get(b.ctx, k)
		require.False(t, hit, k)
	}
	_, hit := b.cache.Get(b.ctx, other)
	require.True(t, hit, "another task's entry stays")

	// Again: the same keys, none left to remove.
	inv, err = b.admin.InvalidateTask(b.ctx, wf, id)
	require.NoError(t, err)
	require.Len(t, inv.Keys, 5)
	require.Zero(t, inv.Removed)

	_, err = b.admin.InvalidateTask(b.ctx, wf, "never")
	require.ErrorIs(t, err, cache.ErrUnknownTask)
}

func TestAdminWithoutBucket(t *testing.T) {
	t.Parallel()
	_, js := natstest.Connect(t, natstest.Server(t, natstest.Sync(time.Second)).ClientURL())
	admin := cache.NewAdmin(js, subjects.MustNames("drover"))
	_, err := admin.Stats(t.Context())
	require.ErrorIs(t, err, cache.ErrNoBucket)
	_, err = admin.Clear(t.Context())
	require.ErrorIs(t, err, cache.ErrNoBucket)
}
