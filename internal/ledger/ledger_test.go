package ledger_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

type bundle struct {
	t     *testing.T
	url   string
	nc    *nats.Conn
	js    jetstream.JetStream
	names subjects.Names
}

func setup(t *testing.T) *bundle {
	t.Helper()
	srv := natstest.Server(t, natstest.Sync(time.Second))
	nc, js := natstest.Connect(t, srv.ClientURL())
	return &bundle{t: t, url: srv.ClientURL(), nc: nc, js: js, names: subjects.MustNames("drover")}
}

// startWorker runs a worker with runners and a ledger of prices and
// budgets (its own connection, as another process would have).
func (b *bundle) startWorker(set runner.Set, prices ledger.Prices, budgets ledger.Budgets, concurrency int) {
	b.t.Helper()
	nc, err := nats.Connect(b.url)
	require.NoError(b.t, err)
	b.t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(b.t, err)
	kv, err := ledger.OpenBucket(context.Background(), js, b.names, 1)
	require.NoError(b.t, err)
	k, err := ledger.NewKeeper(ledger.KeeperDeps{Spend: kv, Pause: ledger.NATSPauser(nc, b.names), Log: natstest.Quiet()}, budgets)
	require.NoError(b.t, err)
	led, err := ledger.New(ledger.Deps{Keeper: k}, prices)
	require.NoError(b.t, err)
	w, err := worker.New(nc, worker.Config{Concurrency: concurrency, Runners: set, Ledger: led, Log: natstest.Quiet(), FetchWait: time.Second,
		Pipeline: pipeline.Config{RetryBase: 20 * time.Millisecond, RetryMax: 100 * time.Millisecond}})
	require.NoError(b.t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	b.t.Cleanup(func() { cancel(); _ = natstest.Recv(b.t, done, 30*time.Second) })
	select {
	case <-w.Started():
	case err := <-done:
		b.t.Fatalf("worker stopped at start: %v", err)
	}
}

// run submits reqs and waits for n terminal events of wf.
func (b *bundle) run(wf string, n int, reqs ...subjects.TaskRequest) map[string]subjects.AuditEvent {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	after, err := producer.AuditLastSeq(ctx, b.js, b.names)
	require.NoError(b.t, err)
	for _, r := range reqs {
		_, err := producer.Publish(ctx, b.js, b.names, subjects.DefaultQueue, r)
		require.NoError(b.t, err)
	}
	got := map[string]subjects.AuditEvent{}
	require.NoError(b.t, producer.FollowTerminal(ctx, b.js, b.names, wf, after, func(tm producer.Terminal) bool {
		got[tm.Event.TaskID] = tm.Event
		return len(got) < n
	}))
	return got
}

// roleCosts sums the cost every role event of wf records.
func (b *bundle) roleCosts(wf string) (usd, saved float64, events int) {
	b.t.Helper()
	err := audit.Replay(context.Background(), b.js, b.names, audit.Query{Workflow: wf}, func(r audit.Record) error {
		if !r.Event.EventType.Valid() || r.Event.Actor == subjects.ActorSystem {
			return nil
		}
		c, ok := ledger.FromMetadata(r.Event.Metadata)
		require.True(b.t, ok, "event %s carries its cost", r.Event.EventID)
		usd += c.USD
		saved += c.SavedUSD
		events++
		return nil
	})
	require.NoError(b.t, err)
	return usd, saved, events
}

func report(t *testing.T, b *bundle, wf string, by ...string) *ledger.Report {
	t.Helper()
	rep, err := ledger.NewReport(by)
	require.NoError(t, err)
	require.NoError(t, audit.Replay(context.Background(), b.js, b.names, audit.Query{Workflow: wf}, func(r audit.Record) error {
		rep.Add(&r.Event)
		return nil
	}))
	return rep
}

// fakeOpenAI answers chat completions as each role (by URL path) with a
// fixed usage, and counts its calls (the worker's health checks of
// <base>/models are answered and not counted).
func fakeOpenAI(t *testing.T, calls *atomic.Int64) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if strings.HasSuffix(r.URL.Path, "/models") {
			_ = json.NewEncoder(w).Encode(map[string]any{"object": "list", "data": []any{}})
			return
		}
		calls.Add(1)
		content := map[string]string{
			"/planner/chat/completions":     `{"plan":"do it","steps":["a","b"]}`,
			"/implementer/chat/completions": `{"change":"done, with a test"}`,
			"/judge/chat/completions":       `{"verdict":"approve","feedback":"fine"}`,
		}[r.URL.Path]
		if content == "" {
			http.NotFound(w, r)
			return
		}
		_ = json.NewEncoder(w).Encode(map[string]any{
			"id": "c1", "model": "gpt-test-2026-01-01",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop", "message": map[string]any{"role": "assistant", "content": content}}},
			"usage":   map[string]any{"prompt_tokens": 1000, "completion_tokens": 200, "total_tokens": 1200},
		})
	}))
	t.Cleanup(srv.Close)
	return srv
}

// Tasks through an OpenAI-compatible server reporting usage, with prices:
// every role event carries its cost, the report's total is the sum over
// the events, and a re-run served by the cache spends nothing and shows
// what it saved.
func TestCostThroughOpenAI(t *testing.T) {
	b := setup(t)
	var calls atomic.Int64
	api := fakeOpenAI(t, &calls)
	var set runner.Set
	for _, role := range subjects.Roles {
		o, err := runner.NewOpenAI(role, runner.OpenAIConfig{BaseURL: api.URL + "/" + string(role), Model: "gpt-test"}, nil)
		require.NoError(t, err)
		switch role {
		case subjects.RolePlanner:
			set.Planner = o
		case subjects.RoleImplementer:
			set.Implementer = o
		case subjects.RoleJudge:
			set.Judge = o
		}
	}
	prices := ledger.Prices{Models: map[string]ledger.ModelPrice{"gpt-test": {Input: 2.5, Output: 10}}}
	b.startWorker(set, prices, ledger.Budgets{}, 4)
	const perCall = (1000*2.5 + 200*10) / 1e6
	var reqs, again []subjects.TaskRequest
	for i := range 5 {
		reqs = append(reqs, subjects.TaskRequest{Workflow: "paid", ID: fmt.Sprintf("T%d", i), Scope: "do it"})
		again = append(again, subjects.TaskRequest{Workflow: "cached", ID: fmt.Sprintf("T%d", i), Scope: "do it"})
	}
	b.run("paid", 5, reqs...)
	require.EqualValues(t, 15, calls.Load())
	usd, saved, n := b.roleCosts("paid")
	assert.Equal(t, 15, n)
	assert.InDelta(t, 15*perCall, usd, 1e-9)
	assert.Zero(t, saved)
	rep := report(t, b, "paid", ledger.Dimensions...)
	assert.InDelta(t, usd, rep.Total.USD, 1e-12, "the report's total is the sum over the events")
	assert.EqualValues(t, 15, rep.Total.Calls)
	assert.EqualValues(t, 15*1000, rep.Total.InputTokens)
	assert.EqualValues(t, 15*200, rep.Total.OutputTokens)
	for _, row := range rep.Rows() {
		assert.Equal(t, "gpt-test-2026-01-01", row.Model)
		assert.Equal(t, subjects.DefaultTaskType, row.Type)
		assert.InDelta(t, 5*perCall, row.USD, 1e-9, row.Role)
	}

	b.run("cached", 5, again...)
	assert.EqualValues(t, 15, calls.Load(), "the re-run is served by the cache")
	usd, saved, n = b.roleCosts("cached")
	assert.Equal(t, 15, n)
	assert.Zero(t, usd, "a cached re-run spends nothing")
	assert.InDelta(t, 15*perCall, saved, 1e-9, "and saves what the calls cost")
	rep = report(t, b, "cached", ledger.ByWorkflow)
	assert.EqualValues(t, 15, rep.Total.CacheHits)
	assert.InDelta(t, saved, rep.Total.SavedUSD, 1e-12)
}

// An exec agent that prints its usage and cost is counted at the cost it
// reported.
func TestCostOfAnExecAgent(t *testing.T) {
	b := setup(t)
	dir := t.TempDir()
	path := dir + "/judge.sh"
	require.NoError(t, writeScript(path, `cat >/dev/null
echo '{"verdict":"approve","feedback":"ok"}'
echo '{"type":"result","usage":{"input_tokens":700,"output_tokens":50},"total_cost_usd":0.0125}'`))
	judge, err := runner.NewExec(subjects.RoleJudge, runner.ExecConfig{Argv: []string{path}, Dir: dir}, nil)
	require.NoError(t, err)
	sim := runner.NewSim(runner.SimOptions{})
	b.startWorker(runner.Set{Planner: sim, Implementer: sim, Judge: judge, NoCache: runner.RoleFlags{Judge: true}}, ledger.Prices{}, ledger.Budgets{}, 2)
	b.run("exec", 3,
		subjects.TaskRequest{Workflow: "exec", ID: "a", Scope: "a"},
		subjects.TaskRequest{Workflow: "exec", ID: "b", Scope: "b"},
		subjects.TaskRequest{Workflow: "exec", ID: "c", Scope: "c"})
	rep := report(t, b, "exec", ledger.ByRole)
	byRole := map[string]ledger.Row{}
	for _, r := range rep.Rows() {
		byRole[r.Role] = r
	}
	assert.InDelta(t, 3*0.0125, byRole["judge"].USD, 1e-12)
	assert.EqualValues(t, 3*700, byRole["judge"].InputTokens)
	assert.EqualValues(t, 3*50, byRole["judge"].OutputTokens)
	assert.Zero(t, byRole["planner"].USD, "the sim costs nothing")
	assert.InDelta(t, 3*0.0125, rep.Total.USD, 1e-12)
}

// costly is a runner set whose calls report their cost: planner $0.20,
// implementer $0.50, judge $0.30; the judge rejects the first round of a
// task whose scope says so. It counts the calls of each role.
type costly struct {
	calls [3]atomic.Int64
}

func (c *costly) set() runner.Set {
	mk := func(i int, role subjects.Role, usd float64) runner.Runner {
		return runner.Func{ID: "costly/" + string(role), F: func(_ context.Context, req runner.Request) (runner.Result, error) {
			c.calls[i].Add(1)
			res := runner.Result{Metadata: map[string]any{"cost_usd": usd}}
			switch role {
			case subjects.RolePlanner:
				res.Output, res.Action = json.RawMessage(`{"plan":"p"}`), "plan"
			case subjects.RoleImplementer:
				res.Output, res.Action = json.RawMessage(fmt.Sprintf(`{"change":"round %d"}`, req.Attempt)), "change"
			default:
				res.Action = subjects.VerdictApprove
				if strings.Contains(req.Task.Scope, "reject once") && req.Attempt == 1 {
					res.Action = subjects.VerdictReject
				}
				res.Output = json.RawMessage(fmt.Sprintf(`{"verdict":%q}`, res.Action))
				res.Reasoning = "round " + fmt.Sprint(req.Attempt)
			}
			return res, nil
		}}
	}
	return runner.Set{Planner: mk(0, subjects.RolePlanner, 0.2), Implementer: mk(1, subjects.RoleImplementer, 0.5), Judge: mk(2, subjects.RoleJudge, 0.3),
		NoCache: runner.RoleFlags{Planner: true, Implementer: true, Judge: true}}
}

func budget(r subjects.TaskRequest, key string, usd float64) subjects.TaskRequest {
	if r.Metadata == nil {
		r.Metadata = map[string]json.RawMessage{}
	}
	r.Metadata[key] = json.RawMessage(fmt.Sprint(usd))
	return r
}

// A task whose second round would take it over its budget fails with
// budget_exceeded before that round's implementer starts; one whose
// budget covers the round completes.
func TestTaskBudgetStopsTheRoundBeforeItStarts(t *testing.T) {
	b := setup(t)
	var c costly
	b.startWorker(c.set(), ledger.Prices{}, ledger.Budgets{}, 2)
	tight := budget(subjects.TaskRequest{Workflow: "budget", ID: "tight", Scope: "reject once"}, ledger.MetaTaskBudget, 1.2)
	got := b.run("budget", 1, tight)
	ev := got["tight"]
	require.Equal(t, subjects.EventTaskFailed, ev.EventType)
	assert.Equal(t, string(subjects.ReasonBudgetExceeded), ev.Action)
	assert.Contains(t, ev.Error, "task budget exceeded")
	assert.EqualValues(t, 1, c.calls[1].Load(), "the second round's implementer never started")
	usd, _, _ := b.roleCosts("budget")
	assert.InDelta(t, 1.0, usd, 1e-9)

	dlq, err := b.js.Stream(context.Background(), b.names.DLQStream())
	require.NoError(t, err)
	m, err := dlq.GetLastMsgForSubject(context.Background(), b.names.DLQSubject(subjects.DefaultQueue))
	require.NoError(t, err)
	assert.Equal(t, string(subjects.ReasonBudgetExceeded), m.Header.Get(subjects.HeaderReason))

	roomy := budget(subjects.TaskRequest{Workflow: "budget2", ID: "roomy", Scope: "reject once"}, ledger.MetaTaskBudget, 2.0)
	got = b.run("budget2", 1, roomy)
	assert.Equal(t, subjects.EventTaskCompleted, got["roomy"].EventType)
	assert.EqualValues(t, 3, c.calls[1].Load())
}

// Two workers on one workflow with a budget: the workflow is paused with
// the reason once its spend reaches the budget, and the spend the audit
// record shows is over the budget by at most the roles that were running.
func TestWorkflowBudgetAcrossWorkers(t *testing.T) {
	b := setup(t)
	var c costly
	const perWorker, limit = 3, 2.0
	b.startWorker(c.set(), ledger.Prices{}, ledger.Budgets{}, perWorker)
	b.startWorker(c.set(), ledger.Prices{}, ledger.Budgets{}, perWorker)
	ctx := context.Background()
	const n = 30
	for i := range n {
		r := budget(subjects.TaskRequest{Workflow: "capped", ID: fmt.Sprintf("T%02d", i), Scope: "work"}, ledger.MetaWorkflowBudget, limit)
		_, err := producer.Publish(ctx, b.js, b.names, subjects.DefaultQueue, r)
		require.NoError(t, err)
	}
	kv, err := b.js.KeyValue(ctx, b.names.StateBucket())
	require.NoError(t, err)
	var mu sync.Mutex
	var last string
	require.Eventually(t, func() bool {
		e, err := kv.Get(ctx, subjects.StateKey("capped", subjects.Reserved))
		if err != nil {
			return false
		}
		var ws subjects.WorkflowState
		if json.Unmarshal(e.Value(), &ws) != nil || ws.State != subjects.StatePaused {
			return false
		}
		mu.Lock()
		last = ws.Reason
		mu.Unlock()
		return true
	}, 30*time.Second, 20*time.Millisecond, "the workflow is paused")
	assert.Contains(t, last, "workflow budget exceeded")
	// Wait until no role runs: every call the workers started is recorded.
	stable := 0
	var prev int64
	require.Eventually(t, func() bool {
		total := c.calls[0].Load() + c.calls[1].Load() + c.calls[2].Load()
		if total == prev {
			stable++
		} else {
			stable, prev = 0, total
		}
		return stable >= 25
	}, 30*time.Second, 20*time.Millisecond)
	usd, _, events := b.roleCosts("capped")
	inFlight := float64(2*perWorker) * 0.5 // at most every slot's role, at the dearest role's cost
	t.Logf("spent $%.2f over %d role events; budget $%.2f, roles in flight at most %d", usd, events, limit, 2*perWorker)
	assert.GreaterOrEqual(t, usd, limit, "the budget was reached")
	assert.LessOrEqual(t, usd, limit+inFlight+1e-9, "overspent by more than the roles in flight")
	assert.Less(t, usd, n*1.0, "not every task ran")
}

func writeScript(path, body string) error {
	return writeFile(path, "#!/bin/sh\n"+body+"\n")
}

// Workers adding to one workflow's spend at once lose no update: the total
// is the sum of every add, over keepers on their own connections.
func TestKeeperLosesNoUpdate(t *testing.T) {
	b := setup(t)
	ctx := context.Background()
	var keepers []*ledger.Keeper
	for range 3 {
		nc, err := nats.Connect(b.url)
		require.NoError(t, err)
		t.Cleanup(nc.Close)
		js, err := jetstream.New(nc)
		require.NoError(t, err)
		kv, err := ledger.OpenBucket(ctx, js, b.names, 1)
		require.NoError(t, err)
		k, err := ledger.NewKeeper(ledger.KeeperDeps{Spend: kv, Log: natstest.Quiet()}, ledger.Budgets{})
		require.NoError(t, err)
		keepers = append(keepers, k)
	}
	var wg sync.WaitGroup
	const adds = 40
	for i := range adds {
		wg.Add(1)
		go func() {
			defer wg.Done()
			req := runner.Request{Role: subjects.RoleJudge, Task: subjects.TaskRequest{Workflow: "wf", ID: fmt.Sprintf("T%d", i%4)}}
			assert.NoError(t, keepers[i%3].Add(ctx, req, 0.25))
		}()
	}
	wg.Wait()
	s, err := keepers[0].Get(ctx, ledger.WorkflowKey("wf"))
	require.NoError(t, err)
	assert.InDelta(t, adds*0.25, s.USD, 1e-9)
	assert.EqualValues(t, adds, s.Calls)
	task, err := keepers[1].Get(ctx, ledger.TaskKey("wf", "T1"))
	require.NoError(t, err)
	assert.InDelta(t, adds/4*0.25, task.USD, 1e-9)
	usd, n, err := ledger.FleetSpend(ctx, b.js, b.names)
	require.NoError(t, err)
	assert.Equal(t, 1, n)
	assert.InDelta(t, adds*0.25, usd, 1e-9)
}
