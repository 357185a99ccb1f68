package jsapi_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/jsapi"
	"github.com/droverhq/drover/internal/natstest"
)

// kvSetup starts an embedded server with a bucket of one revision per key.
func kvSetup(t *testing.T) (context.Context, jetstream.JetStream, jetstream.KeyValue, *jsapi.Bucket) {
	t.Helper()
	srv := natstest.Server(t)
	_, js := natstest.Connect(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "b", History: 1})
	require.NoError(t, err)
	return ctx, js, kv, jsapi.NewBucket(js, kv)
}

func TestBucketReadsAndWritesAsTheBucketDoes(t *testing.T) {
	t.Parallel()
	ctx, _, kv, b := kvSetup(t)

	_, err := b.Get(ctx, "wf.T1")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound)

	rev, err := b.Create(ctx, "wf.T1", []byte("one"))
	require.NoError(t, err)
	e, err := b.Get(ctx, "wf.T1")
	require.NoError(t, err)
	assert.Equal(t, jsapi.Entry{Value: []byte("one"), Revision: rev}, e)
	theirs, err := kv.Get(ctx, "wf.T1")
	require.NoError(t, err)
	assert.Equal(t, theirs.Revision(), e.Revision)

	// A second create is refused as the bucket refuses it.
	_, ours := b.Create(ctx, "wf.T1", []byte("two"))
	_, lib := kv.Create(ctx, "wf.T1", []byte("two"))
	require.ErrorIs(t, ours, jetstream.ErrKeyExists)
	assert.Equal(t, lib.Error(), ours.Error())

	// So is an update on a stale revision, which matches both sentinels.
	next, err := b.Update(ctx, "wf.T1", []byte("two"), rev)
	require.NoError(t, err)
	assert.Greater(t, next, rev)
	_, ours = b.Update(ctx, "wf.T1", []byte("three"), rev)
	_, lib = kv.Update(ctx, "wf.T1", []byte("three"), rev)
	require.ErrorIs(t, ours, jetstream.ErrKeyExists)
	require.ErrorIs(t, ours, jetstream.ErrKeyRevisionMismatch)
	assert.Equal(t, lib.Error(), ours.Error())
	e, err = b.Get(ctx, "wf.T1")
	require.NoError(t, err)
	assert.Equal(t, jsapi.Entry{Value: []byte("two"), Revision: next}, e)

	// A put writes whatever the revision, as the bucket's does.
	put, err := b.Put(ctx, "wf.T1", []byte("put"))
	require.NoError(t, err)
	assert.Greater(t, put, next)
	e, err = b.Get(ctx, "wf.T1")
	require.NoError(t, err)
	assert.Equal(t, jsapi.Entry{Value: []byte("put"), Revision: put}, e)

	// An update of a key that has none yet is refused too.
	_, err = b.Update(ctx, "wf.T2", []byte("x"), 1)
	require.ErrorIs(t, err, jetstream.ErrKeyRevisionMismatch)

	// A write that fails for another reason says so: it is no conflict.
	done, cancel := context.WithCancel(ctx)
	cancel()
	_, err = b.Create(done, "wf.T1", []byte("x"))
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, jetstream.ErrKeyExists)
	_, err = b.Update(done, "wf.T1", []byte("x"), rev)
	require.ErrorIs(t, err, context.Canceled)
	require.NotErrorIs(t, err, jetstream.ErrKeyRevisionMismatch)
}

func TestBucketDeletedKeys(t *testing.T) {
	t.Parallel()
	ctx, _, kv, b := kvSetup(t)
	for _, k := range []string{"del", "purge"} {
		_, err := b.Create(ctx, k, []byte("v"))
		require.NoError(t, err)
	}
	require.NoError(t, kv.Delete(ctx, "del"))
	require.NoError(t, kv.Purge(ctx, "purge"))
	for _, k := range []string{"del", "purge"} {
		// Read as missing, as the bucket's Get reads it.
		_, err := b.Get(ctx, k)
		require.ErrorIs(t, err, jetstream.ErrKeyNotFound, k)
		_, lib := kv.Get(ctx, k)
		require.ErrorIs(t, lib, jetstream.ErrKeyNotFound, k)

		// A create writes over the marker, as the bucket's does.
		rev, err := b.Create(ctx, k, []byte("again"))
		require.NoError(t, err, k)
		got, err := b.Get(ctx, k)
		require.NoError(t, err)
		assert.Equal(t, jsapi.Entry{Value: []byte("again"), Revision: rev}, got)
	}
}

// A bucket whose stream does not allow direct gets (made by another tool)
// is still read, through the bucket's own API.
func TestBucketWithoutDirectGets(t *testing.T) {
	t.Parallel()
	ctx, js, kv, b := kvSetup(t)
	rev, err := b.Create(ctx, "k", []byte("v"))
	require.NoError(t, err)
	st, err := js.Stream(ctx, "KV_"+kv.Bucket())
	require.NoError(t, err)
	cfg := st.CachedInfo().Config
	cfg.AllowDirect = false
	_, err = js.UpdateStream(ctx, cfg)
	require.NoError(t, err)
	// A worker that starts finds the bucket so.
	kv, err = js.KeyValue(ctx, kv.Bucket())
	require.NoError(t, err)
	b = jsapi.NewBucket(js, kv)

	e, err := b.Get(ctx, "k")
	require.NoError(t, err)
	assert.Equal(t, jsapi.Entry{Value: []byte("v"), Revision: rev}, e)
	_, err = b.Get(ctx, "missing")
	require.ErrorIs(t, err, jetstream.ErrKeyNotFound)
}

func TestBucketRefusesInvalidKeys(t *testing.T) {
	t.Parallel()
	ctx, _, _, b := kvSetup(t)
	_, err := b.Create(ctx, "wf.a", []byte("v"))
	require.NoError(t, err)
	// A wildcard would read or write some other key: refused before any
	// request.
	for _, k := range []string{"", "wf.*", "wf.>", ">", "wf..a", ".wf", "wf.", "w f", "wf\r\n"} {
		_, err := b.Get(ctx, k)
		require.ErrorIs(t, err, jetstream.ErrInvalidKey, "%q", k)
		_, err = b.Create(ctx, k, []byte("v"))
		require.ErrorIs(t, err, jetstream.ErrInvalidKey, "%q", k)
		_, err = b.Update(ctx, k, []byte("v"), 1)
		require.ErrorIs(t, err, jetstream.ErrInvalidKey, "%q", k)
		_, err = b.Put(ctx, k, []byte("v"))
		require.ErrorIs(t, err, jetstream.ErrInvalidKey, "%q", k)
	}
}

// libraryKeyValid is the rule nats.go's key-value store applies to a key.
var libraryKeyRe = regexp.MustCompile(`^[-/_=\.a-zA-Z0-9]+$`)

func libraryKeyValid(k string) bool {
	if k == "" || k[0] == '.' || k[len(k)-1] == '.' || strings.Contains(k, "..") {
		return false
	}
	return libraryKeyRe.MatchString(k)
}

func TestKeyValid(t *testing.T) {
	t.Parallel()
	for _, k := range []string{"a", "wf.T1", "planner.0123abcdef", "a-b_c=d/e", "A.Z.0.9", "é", "a b", "a*", "a>", "a..b", ".a", "a.", "", "\x00"} {
		assert.Equal(t, libraryKeyValid(k), jsapi.KeyValid(k), "%q", k)
	}
}

func FuzzKeyValid(f *testing.F) {
	for _, k := range []string{"wf.T1", "a..b", "wf.*", "x y", ""} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, k string) {
		require.Equal(t, libraryKeyValid(k), jsapi.KeyValid(k), "%q", k)
	})
}
