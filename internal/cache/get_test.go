package cache_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// TestGetThroughTheBucket reads a hit, a miss, a deleted entry and a
// corrupt one through the bucket.
func TestGetThroughTheBucket(t *testing.T) {
	t.Parallel()
	b := setup(t)
	hit, missing, deleted, corrupt := key(subjects.RolePlanner, "hit"), key(subjects.RolePlanner, "missing"),
		key(subjects.RoleJudge, "deleted"), key(subjects.RoleImplementer, "corrupt")
	want := runner.Result{Output: json.RawMessage(`{"plan":"p"}`), Action: "done"}
	f, err := b.cache.PutAsync(b.js, hit, want)
	require.NoError(t, err)
	select {
	case <-f.Ok():
	case err := <-f.Err():
		require.NoError(t, err)
	}
	b.put(t, deleted)
	require.NoError(t, b.res.Cache.Delete(b.ctx, deleted))
	_, err = b.res.Cache.Put(b.ctx, corrupt, []byte(`{"output":`))
	require.NoError(t, err)

	for name, c := range map[string]*cache.Cache{"kv": b.cache} {
		got, ok := c.Get(b.ctx, hit)
		require.True(t, ok, name)
		assert.JSONEq(t, string(want.Output), string(got.Output), name)
		assert.Equal(t, want.Action, got.Action, name)
		for _, k := range []string{missing, deleted, corrupt} {
			_, ok := c.Get(b.ctx, k)
			assert.False(t, ok, "%s: %s", name, k)
		}
	}
}
