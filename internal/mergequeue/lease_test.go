package mergequeue

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// One holder at a time: a second acquire fails while the lease lives, the
// holder renews it, a released lease is free at once, an expired one is
// taken by another holder and the old holder's renewal is ErrLeaseLost.
func TestLeaseIsExclusive(t *testing.T) {
	t.Parallel()
	srv := natstest.Server(t)
	_, js := natstest.Connect(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, kv, err := Provision(ctx, js, NewNames(subjects.MustNames("drover")), Config{Target: "main", LeaseTTL: time.Second})
	require.NoError(t, err)

	a, ok, err := acquire(ctx, kv, LeaseKey("main"), "a")
	require.NoError(t, err)
	require.True(t, ok)
	_, ok, err = acquire(ctx, kv, LeaseKey("main"), "b")
	require.NoError(t, err)
	require.False(t, ok, "held by a")
	require.NoError(t, a.renew(ctx))
	a.release(ctx)
	b, ok, err := acquire(ctx, kv, LeaseKey("main"), "b")
	require.NoError(t, err)
	require.True(t, ok, "released")

	// b stops renewing: its lease expires and c takes it.
	var c *lease
	assert.Eventually(t, func() bool {
		c, ok, err = acquire(ctx, kv, LeaseKey("main"), "c")
		return err == nil && ok
	}, 30*time.Second, 50*time.Millisecond)
	require.NotNil(t, c)
	require.ErrorIs(t, b.renew(ctx), ErrLeaseLost)
	b.release(ctx) // a lost lease's release leaves the new holder's alone
	require.NoError(t, c.renew(ctx))
	// Another target's lease is its own.
	_, ok, err = acquire(ctx, kv, LeaseKey("release/1.0"), "b")
	require.NoError(t, err)
	require.True(t, ok)
}
