package pipeline

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
)

// putCounter counts the cache writes a pipeline reports failed.
type putCounter struct {
	nopMetrics
	failed atomic.Int64
}

func (c *putCounter) CachePutFailed() { c.failed.Add(1) }

// settlePuts waits for every cache write of the task, whether it was
// confirmed before the wait or during it, counts each one the server
// refused, and leaves the task with none in flight.
func TestSettlePuts(t *testing.T) {
	srv := natstest.Server(t)
	_, js := natstest.Connect(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	kv, err := js.CreateKeyValue(ctx, jetstream.KeyValueConfig{Bucket: "settle", MaxValueSize: 64})
	require.NoError(t, err)
	put := func(t *testing.T, key string, size int) pendingPut {
		f, err := js.PublishMsgAsync(&nats.Msg{Subject: "$KV." + kv.Bucket() + "." + key, Data: []byte(strings.Repeat("x", size))})
		require.NoError(t, err)
		return pendingPut{key: key, f: f}
	}
	for _, tc := range []struct {
		name    string
		sizes   []int // of the values written; over 64 bytes the server refuses
		settled bool  // wait for every reply before settlePuts looks
		failed  int64
	}{
		{"none", nil, false, 0},
		{"all confirmed before the wait", []int{10, 20, 30}, true, 0},
		{"confirmed during the wait", []int{10, 20, 30}, false, 0},
		{"one refused, known before the wait", []int{10, 100, 30}, true, 1},
		{"refused during the wait", []int{100, 10, 100}, false, 2},
	} {
		t.Run(tc.name, func(t *testing.T) {
			m := &putCounter{}
			p := &Pipeline{d: Deps{Log: natstest.Quiet(), Metrics: m}}
			run := &taskRun{}
			for i, n := range tc.sizes {
				run.puts = append(run.puts, put(t, tc.name[:3]+string(rune('a'+i)), n))
			}
			if tc.settled {
				select {
				case <-js.PublishAsyncComplete():
				case <-ctx.Done():
					t.Fatal("the writes were not confirmed")
				}
			}
			p.settlePuts(ctx, run)
			require.Empty(t, run.puts)
			require.Equal(t, tc.failed, m.failed.Load())
		})
	}
}
