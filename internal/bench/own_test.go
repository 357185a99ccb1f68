package bench

import (
	"context"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// streamNames lists every stream on the server, KV buckets and object
// stores included.
func streamNames(t *testing.T, js jetstream.JetStream) []string {
	t.Helper()
	var out []string
	l := js.StreamNames(context.Background())
	for n := range l.Name() {
		out = append(out, n)
	}
	require.NoError(t, l.Err())
	return out
}

// Against an external server with the default prefix, the bench never
// touches the deployment's streams (the "drover" prefix's audit stream is
// not even created) and deletes its own afterwards; with Keep they stay,
// and a later run on them is allowed and cleans them up.
func TestRunExternalUsesItsOwnPrefix(t *testing.T) {
	srv := natstest.Server(t)
	_, js := natstest.Connect(t, srv.ClientURL())
	run := func(keep bool) {
		t.Helper()
		rep, err := Run(context.Background(), Config{
			Tasks: 30, Concurrency: 4, URL: srv.ClientURL(), Keep: keep,
			Timeout: 2 * time.Minute, Log: natstest.Quiet(),
		})
		require.NoError(t, err)
		require.Equal(t, 30, rep.Drover.Completed)
		require.Equal(t, "external", rep.Server)
	}

	run(false)
	_, err := js.Stream(context.Background(), subjects.MustNames(subjects.DefaultPrefix).AuditStream())
	require.ErrorIs(t, err, jetstream.ErrStreamNotFound, "the deployment's audit stream is not created")
	require.Empty(t, streamNames(t, js), "the bench deletes its streams and buckets")

	run(true)
	own := subjects.MustNames(DefaultPrefix)
	require.ElementsMatch(t, []string{
		own.TasksStream(), own.AuditStream(), own.DLQStream(), own.LessonsStream(), own.LiveStream(),
		"KV_" + own.StateBucket(), "KV_" + own.CacheBucket(), "OBJ_" + own.BlobStore(),
	}, streamNames(t, js), "kept: the Drover phase's streams and buckets, none of the raw phases'")
	_, err = js.Consumer(context.Background(), own.TasksStream(), own.Consumer(Queue))
	require.ErrorIs(t, err, jetstream.ErrConsumerNotFound, "the bench's consumer goes even with Keep")

	run(false)
	require.Empty(t, streamNames(t, js), "a run on kept streams is allowed and deletes them")
}

// The bench refuses a prefix a deployment uses, and writes nothing into it.
func TestRunRefusesADeploymentPrefix(t *testing.T) {
	names := subjects.MustNames(subjects.DefaultPrefix)
	cases := []struct {
		name string
		use  func(t *testing.T, js jetstream.JetStream)
	}{
		{"audit events of a workflow", func(t *testing.T, js jetstream.JetStream) {
			_, err := js.PublishMsg(context.Background(), &nats.Msg{
				Subject: names.AuditSubject("wf1", "T1", subjects.ActorSystem, subjects.EventTaskAccepted), Data: []byte(`{}`),
			})
			require.NoError(t, err)
		}},
		{"a worker's consumer", func(t *testing.T, js jetstream.JetStream) {
			_, err := js.CreateConsumer(context.Background(), names.TasksStream(), jetstream.ConsumerConfig{
				Durable: names.Consumer("default"), FilterSubject: names.TaskSubject("default"), AckPolicy: jetstream.AckExplicitPolicy,
			})
			require.NoError(t, err)
		}},
		{"a queued request", func(t *testing.T, js jetstream.JetStream) {
			_, err := js.Publish(context.Background(), names.TaskSubject("default"), []byte(`{}`))
			require.NoError(t, err)
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			srv := natstest.Server(t)
			_, js := natstest.Connect(t, srv.ClientURL())
			natstest.Provision(t, context.Background(), js, broker.Settings{Names: names})
			tc.use(t, js)
			before := streamNames(t, js)
			audit, err := js.Stream(context.Background(), names.AuditStream())
			require.NoError(t, err)
			seq := audit.CachedInfo().State.LastSeq

			_, err = Run(context.Background(), Config{Tasks: 5, URL: srv.ClientURL(), Names: names, Timeout: time.Minute, Log: natstest.Quiet()})
			require.ErrorIs(t, err, ErrDeploymentPrefix)
			info, err := audit.Info(context.Background())
			require.NoError(t, err)
			require.Equal(t, seq, info.State.LastSeq, "nothing written into the deployment's audit stream")
			require.ElementsMatch(t, before, streamNames(t, js), "nothing created or deleted")
		})
	}
}
