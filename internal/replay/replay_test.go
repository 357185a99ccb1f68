package replay_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/replay"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// fleet is an embedded server with a sim worker on the default queue.
type fleet struct {
	t     *testing.T
	nc    *nats.Conn
	js    jetstream.JetStream
	names subjects.Names
	sim   *runner.Sim
}

func setup(t *testing.T) *fleet {
	t.Helper()
	srv := natstest.Server(t, natstest.Sync(time.Second))
	nc, js := natstest.Connect(t, srv.ClientURL())
	f := &fleet{t: t, nc: nc, js: js, names: subjects.MustNames("drover"), sim: runner.NewSim(runner.SimOptions{})}
	wnc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(wnc.Close)
	w, err := worker.New(wnc, worker.Config{Concurrency: 8, Runners: runner.SimSet(f.sim), Log: natstest.Quiet(), FetchWait: time.Second,
		Pipeline: workerRetry()})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); require.NoError(t, natstest.Recv(t, done, 30*time.Second)) })
	select {
	case <-w.Started():
	case err := <-done:
		t.Fatalf("worker stopped at start: %v", err)
	}
	return f
}

// run submits reqs and waits for their terminal events.
func (f *fleet) run(wf string, reqs []subjects.TaskRequest) {
	f.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	after, err := producer.AuditLastSeq(ctx, f.js, f.names)
	require.NoError(f.t, err)
	for _, r := range reqs {
		_, err := producer.Publish(ctx, f.js, f.names, subjects.DefaultQueue, r)
		require.NoError(f.t, err)
	}
	n := 0
	require.NoError(f.t, producer.FollowTerminal(ctx, f.js, f.names, wf, after, func(producer.Terminal) bool {
		n++
		return n < len(reqs)
	}))
}

func (f *fleet) record(wf string) *replay.Record {
	f.t.Helper()
	rec, err := replay.Load(context.Background(), f.js, f.names, wf, nil)
	require.NoError(f.t, err)
	return rec
}

func (f *fleet) rerun(opts replay.Options) *replay.Report {
	f.t.Helper()
	opts.Worker.Concurrency = 8
	opts.Worker.FetchWait = time.Second
	opts.Log = natstest.Quiet()
	opts.Timeout = 2 * time.Minute
	rep, err := replay.Run(context.Background(), f.nc, opts)
	require.NoError(f.t, err)
	return rep
}

func task(wf, id, sim string) subjects.TaskRequest {
	r := subjects.TaskRequest{Workflow: wf, ID: id, Scope: "do " + id, Verification: "check " + id}
	if sim != "" {
		r.Metadata = map[string]json.RawMessage{"sim": json.RawMessage(sim)}
	}
	return r
}

// TestReplayReproducesTheRecord replays a 50-task workflow with judge
// rejections, a task that ran out of attempts and one whose implementer
// kept failing: every task ends the same way, after the same rounds, with
// the same outputs, and no runner is called; the same after the cache is
// cleared, and the original record is untouched.
func TestReplayReproducesTheRecord(t *testing.T) {
	f := setup(t)
	const wf = "orig"
	var reqs []subjects.TaskRequest
	for i := range 50 {
		sim := ""
		switch {
		case i == 7:
			sim = `{"fail":{"role":"implementer","times":-1}}`
		case i == 11:
			sim = `{"judge_rejects":5}`
		case i%5 == 0:
			sim = `{"judge_rejects":1}`
		}
		reqs = append(reqs, task(wf, fmt.Sprintf("T%02d", i), sim))
	}
	f.run(wf, reqs)
	before := f.record(wf)
	require.Len(t, before.Order, 50)
	require.Equal(t, subjects.EventTaskFailed, before.Tasks["T07"].Outcome.Type)
	require.Equal(t, string(subjects.ReasonMaxDeliveries), before.Tasks["T07"].Outcome.Reason)
	require.Equal(t, string(subjects.ReasonMaxAttempts), before.Tasks["T11"].Outcome.Reason)
	require.Equal(t, 2, before.Tasks["T05"].Outcome.Attempts)
	calls := f.sim.TotalCalls()

	check := func(rep *replay.Report) {
		t.Helper()
		for _, tr := range rep.Tasks {
			assert.True(t, tr.OutcomeMatch && tr.AttemptsMatch && tr.OutputsMatch, "task %s: %+v", tr.Task, tr)
		}
		assert.Equal(t, 50, rep.Summary.Matching)
		assert.Zero(t, rep.LiveCalls)
		assert.Zero(t, rep.Diverged)
		assert.Positive(t, rep.Served)
		assert.Equal(t, calls, f.sim.TotalCalls(), "a replay calls no runner")
	}
	check(f.rerun(replay.Options{Source: wf, As: "again"}))

	kv, err := f.js.KeyValue(context.Background(), f.names.CacheBucket())
	require.NoError(t, err)
	keys, err := kv.ListKeys(context.Background())
	require.NoError(t, err)
	for k := range keys.Keys() {
		require.NoError(t, kv.Purge(context.Background(), k))
	}
	check(f.rerun(replay.Options{Source: wf, As: "again-uncached"}))

	after := f.record(wf)
	assert.Equal(t, before.Events, after.Events, "the original's record is untouched")
	assert.Equal(t, before.LastSeq, after.LastSeq)
	again := f.record("again")
	assert.JSONEq(t, `"orig"`, string(again.Tasks["T00"].Request.Metadata[replay.MetaReplayOf]))
}

// TestCounterfactualJudge re-runs, with a judge that rejects a change
// without a test, a workflow whose judge approved everything: exactly the
// tasks without a test flip, only the judge runs, the original record is
// untouched and the re-run's record names what it is a counterfactual of.
func TestCounterfactualJudge(t *testing.T) {
	f := setup(t)
	const wf = "judged"
	var reqs []subjects.TaskRequest
	want := map[string]bool{}
	for i := range 12 {
		id := fmt.Sprintf("with-test-%d", i)
		if i%3 == 0 {
			id = fmt.Sprintf("bare-%d", i)
			want[id] = true
		}
		reqs = append(reqs, task(wf, id, ""))
	}
	f.run(wf, reqs)
	before := f.record(wf)
	calls := f.sim.TotalCalls()
	strict := runner.Func{ID: "strict-judge/v1", F: func(_ context.Context, req runner.Request) (runner.Result, error) {
		verdict := subjects.VerdictApprove
		if !strings.Contains(string(req.Change), "test") {
			verdict = subjects.VerdictReject
		}
		if _, marked := req.Task.Metadata[replay.MetaCounterfactualOf]; marked {
			return runner.Result{}, fmt.Errorf("%w: the judge saw the re-run's marker", runner.ErrPermanent)
		}
		return runner.Result{Output: json.RawMessage(fmt.Sprintf(`{"verdict":%q}`, verdict)), Action: verdict, Reasoning: verdict}, nil
	}}
	rep := f.rerun(replay.Options{Source: wf, As: "judged-strict", Role: subjects.RoleJudge, Live: strict})

	got := map[string]bool{}
	for _, id := range rep.Summary.ApproveToReject {
		got[id] = true
	}
	assert.Equal(t, want, got, "exactly the tasks without a test flip")
	assert.Empty(t, rep.Summary.RejectToApprove)
	assert.Equal(t, 12, rep.Summary.Compared)
	assert.Equal(t, 8, rep.Summary.Agreed)
	assert.InDelta(t, 8.0/12, rep.Summary.AgreementRate, 1e-9)
	assert.EqualValues(t, 12, rep.LiveCalls, "the judge ran once a task")
	assert.Equal(t, calls, f.sim.TotalCalls(), "planner and implementer were not called")
	for _, tr := range rep.Tasks {
		assert.Equal(t, want[tr.Task], tr.Changed, tr.Task)
		if want[tr.Task] {
			assert.Equal(t, "approve", tr.OldDecision)
			assert.Equal(t, "reject", tr.NewDecision)
		}
	}
	after := f.record(wf)
	assert.Equal(t, before.Events, after.Events, "the original's record is untouched")
	assert.Equal(t, before.LastSeq, after.LastSeq)
	cf := f.record("judged-strict")
	for _, id := range cf.Order {
		md := cf.Tasks[id].Request.Metadata
		assert.JSONEq(t, `"judged"`, string(md[replay.MetaCounterfactualOf]), id)
		assert.JSONEq(t, `"judge"`, string(md[replay.MetaCounterfactualRole]), id)
	}
}
