package broker

import (
	"context"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestClusterOptions(t *testing.T) {
	t.Parallel()
	cfg := EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: t.TempDir(), ServerName: "n1", Cluster: ClusterConfig{
		Name: "c", Listen: "127.0.0.1:6222", Routes: []string{"nats://127.0.0.1:6222", " nats://127.0.0.1:6223"},
	}}
	opts, err := cfg.serverOptions()
	require.NoError(t, err)
	require.Equal(t, "c", opts.Cluster.Name)
	require.Equal(t, "127.0.0.1", opts.Cluster.Host)
	require.Equal(t, 6222, opts.Cluster.Port)
	require.Len(t, opts.Routes, 2)
	require.Equal(t, "127.0.0.1:6223", opts.Routes[1].Host)

	alone := EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: t.TempDir()}
	opts, err = alone.serverOptions()
	require.NoError(t, err)
	require.Zero(t, opts.Cluster.Port)
	require.Empty(t, opts.Routes)

	for name, c := range map[string]EmbeddedConfig{
		"no cluster name":  {ServerName: "n1", Cluster: ClusterConfig{Listen: "127.0.0.1:6222"}},
		"no server name":   {Cluster: ClusterConfig{Name: "c", Listen: "127.0.0.1:6222"}},
		"routes alone":     {ServerName: "n1", Cluster: ClusterConfig{Routes: []string{"nats://127.0.0.1:6222"}}},
		"bad listen":       {ServerName: "n1", Cluster: ClusterConfig{Name: "c", Listen: "6222"}},
		"bad route scheme": {ServerName: "n1", Cluster: ClusterConfig{Name: "c", Listen: "127.0.0.1:6222", Routes: []string{"http://x:1"}}},
		"route no host":    {ServerName: "n1", Cluster: ClusterConfig{Name: "c", Listen: "127.0.0.1:6222", Routes: []string{"x:1"}}},
	} {
		c.Listen, c.DataDir = "127.0.0.1:0", t.TempDir()
		_, err := c.serverOptions()
		require.Error(t, err, name)
	}
}

// Three in-process nodes form a cluster; Provision with Replicas 3 creates
// every stream and bucket with three replicas, and a single server gets one.
func TestProvisionReplicasOnCluster(t *testing.T) {
	t.Parallel()
	skipShort(t)
	const n = 3
	ports := make([]int, n)
	routes := make([]string, n)
	for i := range ports {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		require.NoError(t, err)
		ports[i] = l.Addr().(*net.TCPAddr).Port
		require.NoError(t, l.Close())
		routes[i] = fmt.Sprintf("nats://127.0.0.1:%d", ports[i])
	}
	var urls []string
	for i := range n {
		e, err := StartEmbedded(EmbeddedConfig{
			Listen: "127.0.0.1:0", DataDir: t.TempDir(), Sync: time.Second, ServerName: fmt.Sprintf("n%d", i+1),
			Cluster: ClusterConfig{Name: "test", Listen: fmt.Sprintf("127.0.0.1:%d", ports[i]), Routes: routes},
		})
		require.NoError(t, err)
		t.Cleanup(e.Shutdown)
		urls = append(urls, e.ClientURL())
	}
	ctx := testCtx(t)
	nc, err := Connect(ctx, strings.Join(urls, ","), t.Name())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	require.Equal(t, "test", nc.ConnectedClusterName())
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		ctx, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		_, err := js.AccountInfo(ctx)
		return err == nil
	}, 20*time.Second, 50*time.Millisecond, "no JetStream meta leader")

	res, err := Provision(ctx, js, Settings{Names: subjects.MustNames("drover"), Replicas: 3}, nil)
	require.NoError(t, err)
	for _, st := range []jetstream.Stream{res.Tasks, res.Audit, res.DLQ, res.Lessons} {
		require.Equal(t, 3, st.CachedInfo().Config.Replicas, st.CachedInfo().Config.Name)
	}
	for _, kv := range []jetstream.KeyValue{res.State, res.Cache} {
		st, err := kv.Status(ctx)
		require.NoError(t, err)
		require.Equal(t, 3, st.(*jetstream.KeyValueBucketStatus).StreamInfo().Config.Replicas, kv.Bucket())
	}
	obs, err := res.Blobs.Status(ctx)
	require.NoError(t, err)
	require.Equal(t, 3, obs.Replicas())
	c, err := EnsureConsumer(ctx, js, subjects.MustNames("drover"), "default", ConsumerSettings{}, nil)
	require.NoError(t, err)
	ci, err := c.Info(ctx)
	require.NoError(t, err)
	require.NotNil(t, ci.Cluster)
	require.Len(t, ci.Cluster.Replicas, 2, "the consumer has the stream's three replicas")
}

func TestReplicasOnSingleServer(t *testing.T) {
	t.Parallel()
	e := startServer(t)
	js := connectJS(t, e)
	log, buf := newLog()
	res, err := Provision(testCtx(t), js, Settings{Names: subjects.MustNames("drover"), Replicas: 3}, log)
	require.NoError(t, err)
	require.Equal(t, 1, res.Tasks.CachedInfo().Config.Replicas)
	require.Contains(t, buf.String(), "not a NATS cluster")
	require.Equal(t, 1, Replicas(js, 1, log))
}
