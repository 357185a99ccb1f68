package tests

import (
	"context"
	"encoding/json"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/blobs"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// bigPlanner is the sim planner with a field over the blob limit added to
// its output. Its second call waits for back, so a test can repair the
// blob store between the first (failed) delivery and the retry.
type bigPlanner struct {
	sim    *runner.Sim
	calls  atomic.Int32
	second chan struct{} // closed by the second call
	back   chan struct{} // closed by the test: go on
}

func (p *bigPlanner) Identity() string { return "bigplanner/v1" }

func (p *bigPlanner) Run(ctx context.Context, req runner.Request) (runner.Result, error) {
	res, err := p.sim.Run(ctx, req)
	if err != nil {
		return res, err
	}
	if p.calls.Add(1) == 2 {
		close(p.second)
		select {
		case <-p.back:
		case <-ctx.Done():
			return runner.Result{}, ctx.Err()
		}
	}
	notes, _ := json.Marshal(strings.Repeat("a large plan. ", (100<<10)/14)) // 100 KiB
	out, _ := json.Marshal(map[string]json.RawMessage{"plan": res.Output, "notes": notes})
	res.Output = out
	return res, nil
}

// blobRefs finds blob references in raw bytes, also inside JSON strings
// (the state's outbox holds events as encoded text).
var blobRefs = regexp.MustCompile(`\\*"blob\\*"\s*:\s*\\*"([0-9a-f]{64})`)

// Scenario: a role's output is over the inline limit while the blob store
// is gone. The failed blob write is an infrastructure error: the delivery
// is retried, and no placeholder is written to any event, state or cache
// entry. Once the store is back, the task completes with a blob reference
// that resolves.
func TestBlobStoreDownRetries(t *testing.T) {
	t.Parallel()
	b := setup(t)
	planner := &bigPlanner{sim: runner.NewSim(runner.SimOptions{}), second: make(chan struct{}), back: make(chan struct{})}
	sim := runner.NewSim(runner.SimOptions{})
	b.startWorker(worker.Config{Concurrency: 2, Runners: runner.Set{Planner: planner, Implementer: sim, Judge: sim}})

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	require.NoError(t, b.js.DeleteObjectStore(ctx, b.names.BlobStore()))

	after := b.submit(task("blob-wf", "T1"))
	select {
	case <-planner.second:
	case <-time.After(30 * time.Second):
		t.Fatalf("the planner ran %d times: the failed blob write was not retried", planner.calls.Load())
	}
	natstest.Provision(t, ctx, b.js, broker.Settings{Names: b.names}) // the store is back
	close(planner.back)

	got := b.waitTerminal("blob-wf", after, 1)
	require.Equal(t, subjects.EventTaskCompleted, got["T1"].EventType, got["T1"].Error)

	// Everything the task wrote, raw.
	var raws []string
	var planOut json.RawMessage
	for _, ev := range b.events("blob-wf") {
		raw, err := json.Marshal(ev)
		require.NoError(t, err)
		raws = append(raws, string(raw))
		if ev.EventType == subjects.RoleEvent(subjects.RolePlanner) {
			planOut = ev.Output
		}
	}
	for _, bucket := range []string{b.names.StateBucket(), b.names.CacheBucket()} {
		kv, err := b.js.KeyValue(ctx, bucket)
		require.NoError(t, err)
		keys, err := kv.ListKeys(ctx)
		require.NoError(t, err)
		for k := range keys.Keys() {
			e, err := kv.Get(ctx, k)
			require.NoError(t, err)
			raws = append(raws, string(e.Value()))
		}
	}
	obj, err := b.js.ObjectStore(ctx, b.names.BlobStore())
	require.NoError(t, err)
	refs := 0
	for _, raw := range raws {
		require.NotContains(t, raw, `omitted`, "no placeholder stands in for a value")
		for _, m := range blobRefs.FindAllStringSubmatch(raw, -1) {
			refs++
			_, err := obj.GetInfo(ctx, m[1])
			require.NoError(t, err, "blob %s is referred to, so it is stored", m[1])
		}
	}
	require.NotZero(t, refs, "the large output is referred to by blob")

	var out map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(planOut, &out))
	var ref blobs.Ref
	require.NoError(t, json.Unmarshal(out["notes"], &ref), "planner_output: %s", planOut)
	require.True(t, ref.Truncated)
	stored, err := obj.GetBytes(ctx, ref.Blob)
	require.NoError(t, err)
	require.Len(t, stored, ref.Bytes)
	b.oracle()
}
