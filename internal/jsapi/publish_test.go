package jsapi_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/droverhq/drover/internal/jsapi"
	"github.com/droverhq/drover/internal/natstest"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

type testBundle struct {
	ctx context.Context
	js  jetstream.JetStream
}

// setup starts an embedded server with a stream on "s.>" that keeps
// duplicates out for a minute.
func setup(t *testing.T) *testBundle {
	t.Helper()
	srv := natstest.Server(t)
	_, js := natstest.Connect(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	_, err := js.CreateStream(ctx, jetstream.StreamConfig{Name: "S", Subjects: []string{"s.>"}, Duplicates: time.Minute})
	require.NoError(t, err)
	return &testBundle{ctx: ctx, js: js}
}

func msg(subject, id string, expect ...string) *nats.Msg {
	m := nats.NewMsg(subject)
	m.Data = []byte("x")
	if id != "" {
		m.Header.Set(jetstream.MsgIDHeader, id)
	}
	if len(expect) == 2 {
		m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, expect[0])
		m.Header.Set(jetstream.ExpectedLastSubjSeqSubjHeader, expect[1])
	}
	return m
}

func TestPublishStoresAndSaysDuplicate(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	a, err := jsapi.Publish(tb.ctx, tb.js, msg("s.a", "one"))
	require.NoError(t, err)
	assert.Equal(t, jsapi.Ack{Seq: 1}, a)
	a, err = jsapi.Publish(tb.ctx, tb.js, msg("s.b", "two"))
	require.NoError(t, err)
	assert.Equal(t, jsapi.Ack{Seq: 2}, a)

	a, err = jsapi.Publish(tb.ctx, tb.js, msg("s.a", "one"))
	require.NoError(t, err)
	assert.Equal(t, jsapi.Ack{Seq: 1, Duplicate: true}, a)
	// Without a deadline of its own, the call is bounded by the default.
	a, err = jsapi.Publish(context.Background(), tb.js, msg("s.c", ""))
	require.NoError(t, err)
	assert.Equal(t, jsapi.Ack{Seq: 3}, a)
}

// TestPublishRefusesAsTheLibraryDoes publishes with a stale expectation
// through both and compares what callers match on.
func TestPublishRefusesAsTheLibraryDoes(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	_, err := jsapi.Publish(tb.ctx, tb.js, msg("s.a", "", "0", "s.a"))
	require.NoError(t, err)

	_, ours := jsapi.Publish(tb.ctx, tb.js, msg("s.a", "", "0", "s.a"))
	_, theirs := tb.js.PublishMsg(tb.ctx, msg("s.a", "", "0", "s.a"))
	require.Error(t, ours)
	require.Error(t, theirs)
	assert.Equal(t, theirs.Error(), ours.Error())
	assert.True(t, jsapi.IsWrongLastSequence(ours))
	assert.True(t, jsapi.IsWrongLastSequence(theirs))
	assert.ErrorIs(t, ours, jetstream.ErrKeyExists)
	var apiErr *jetstream.APIError
	require.ErrorAs(t, ours, &apiErr)
	assert.Equal(t, jetstream.JSErrCodeStreamWrongLastSequence, apiErr.ErrorCode)

	// The right expectation is stored.
	a, err := jsapi.Publish(tb.ctx, tb.js, msg("s.a", "", "1", "s.a"))
	require.NoError(t, err)
	assert.Equal(t, uint64(2), a.Seq)
}

func TestPublishWithoutAStream(t *testing.T) {
	t.Parallel()
	tb := setup(t)
	// No stream: tried again twice, then the library's error.
	_, err := jsapi.Publish(tb.ctx, tb.js, msg("nostream", ""))
	require.ErrorIs(t, err, jetstream.ErrNoStreamResponse)

	// A context that ends while it waits to try again ends the call.
	ctx, cancel := context.WithCancel(tb.ctx)
	cancel()
	_, err = jsapi.Publish(ctx, tb.js, msg("nostream", ""))
	require.True(t, errors.Is(err, context.Canceled), "%v", err)
}
