package consumers

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// pullQueue is a server with queue "q"'s consumer, and the subject its
// pull requests go to.
type pullQueue struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	names   subjects.Names
	ctx     context.Context
	cons    jetstream.Consumer
	subject string
}

func newPullQueue(t *testing.T) pullQueue {
	t.Helper()
	_, nc, js, _ := natstest.Provisioned(t, natstest.Sync(time.Second))
	names := subjects.MustNames(subjects.DefaultPrefix)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	t.Cleanup(cancel)
	cons, err := broker.EnsureConsumer(ctx, js, names, "q", broker.ConsumerSettings{}, natstest.Quiet())
	require.NoError(t, err)
	return pullQueue{nc: nc, js: js, names: names, ctx: ctx, cons: cons,
		subject: nextSubject(js, cons.CachedInfo().Stream, cons.CachedInfo().Name)}
}

// A pull ended early still reads what reached its inbox before the server
// saw it end: the subscription is drained, not dropped. A message
// published to the inbox on the pull's own connection just before stop is
// ordered before the unsubscribe, so the server has routed it to the pull
// before it removes the interest; an unsubscribe at once (what the
// library's Fetch does when cancelled) would drop it on arrival. The
// server's own deliveries race the unsubscribe the same way: in 600 rounds
// of a real task published as the pull stops, the library's Fetch left
// 23-44 delivered and unread, this pull 2-7 (a delivery the server had
// queued before the unsubscribe and sends after it).
func TestStoppedPullReadsWhatCameFirst(t *testing.T) {
	t.Parallel()
	q := newPullQueue(t)
	nc, ctx, subject := q.nc, q.ctx, q.subject
	for i := range 10 {
		p, err := startPull(nc, subject, 2, time.Minute)
		require.NoError(t, err)
		require.NoError(t, nc.Publish(p.sub.Subject, fmt.Appendf(nil, `{"i":%d}`, i)))
		require.True(t, p.stop(), "the pull was waiting")
		select {
		case <-p.ended:
		case <-ctx.Done():
			t.Fatalf("round %d: the pull's drain never ended", i)
		}
		require.NoError(t, p.error())
		require.Len(t, p.msgs, 1, "round %d: what came before the end is read", i)
		assert.Equal(t, fmt.Sprintf(`{"i":%d}`, i), string((<-p.msgs).Data))
	}
}

// A pull ends as the server ends it: on its n-th message, or on the
// status that says its time is up (the server's expiry comes before the
// wait given).
func TestPullEndsWithTheServer(t *testing.T) {
	t.Parallel()
	q := newPullQueue(t)
	nc, js, names, ctx, cons, subject := q.nc, q.js, q.names, q.ctx, q.cons, q.subject
	for i := range 3 {
		_, err := js.Publish(ctx, names.TaskSubject("q"), fmt.Appendf(nil, `{"i":%d}`, i))
		require.NoError(t, err)
	}

	p, err := startPull(nc, subject, 2, time.Minute)
	require.NoError(t, err)
	natstest.Recv(t, p.ended, 30*time.Second)
	require.NoError(t, p.error())
	require.Len(t, p.msgs, 2, "the n-th message ends it")
	assert.False(t, p.stop(), "an ended pull is not stopped again")

	p, err = startPull(nc, subject, 5, 200*time.Millisecond)
	require.NoError(t, err)
	natstest.Recv(t, p.ended, 30*time.Second)
	require.NoError(t, p.error(), "its time up is no error")
	require.Len(t, p.msgs, 1)
	m := pulled{<-p.msgs}
	md, err := m.Metadata()
	require.NoError(t, err)
	assert.Equal(t, uint64(3), md.Sequence.Stream)
	assert.Equal(t, uint64(1), md.NumDelivered)
	assert.Equal(t, cons.CachedInfo().Name, md.Consumer)
	require.NoError(t, m.TermWithReason("done here"))
}

// A pull of a consumer that is not there ends with the library's error.
func TestPullOfAMissingConsumer(t *testing.T) {
	t.Parallel()
	_, nc, js, _ := natstest.Provisioned(t, natstest.Sync(time.Second))
	p, err := startPull(nc, nextSubject(js, "NO_STREAM", "nobody"), 1, time.Minute)
	require.NoError(t, err)
	natstest.Recv(t, p.ended, 30*time.Second)
	require.ErrorIs(t, p.error(), nats.ErrNoResponders)
}

// The statuses of a pull, read as the library's Fetch reads them.
func TestPullStatus(t *testing.T) {
	t.Parallel()
	status := func(code, desc string) *nats.Msg {
		return &nats.Msg{Header: nats.Header{"Status": {code}, "Description": {desc}}}
	}
	for _, tc := range []struct {
		name string
		msg  *nats.Msg
		user bool
		err  error
		text string
	}{
		{name: "a message", msg: &nats.Msg{Data: []byte("{}")}, user: true},
		{name: "an empty message", msg: &nats.Msg{Header: nats.Header{"Drover-Queue": {"q"}}}, user: true},
		{name: "a heartbeat", msg: status("100", "Idle Heartbeat")},
		{name: "no messages", msg: status("404", "No Messages"), err: errPullEnded},
		{name: "its time up", msg: status("408", "Request Timeout"), err: errPullEnded},
		{name: "its byte limit", msg: status("409", "Message Size Exceeds MaxBytes"), err: errPullEnded},
		{name: "consumer deleted", msg: status("409", "Consumer Deleted"), err: jetstream.ErrConsumerDeleted},
		{name: "leadership change", msg: status("409", "Leadership Change"), err: jetstream.ErrConsumerLeadershipChanged},
		{name: "server shutdown", msg: status("409", "Server Shutdown"), err: jetstream.ErrServerShutdown},
		{name: "batch completed", msg: status("409", "Batch Completed"), err: jetstream.ErrBatchCompleted},
		{name: "bad request", msg: status("400", "Bad Request"), err: jetstream.ErrBadRequest},
		{name: "no responders", msg: status("503", ""), err: nats.ErrNoResponders},
		{name: "another conflict", msg: status("409", "Exceeded MaxWaiting"), text: "nats: Exceeded MaxWaiting"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			user, err := pullStatus(tc.msg)
			assert.Equal(t, tc.user, user)
			switch {
			case tc.text != "":
				require.EqualError(t, err, tc.text)
			case tc.err != nil:
				require.ErrorIs(t, err, tc.err)
			default:
				require.NoError(t, err)
			}
		})
	}
}
