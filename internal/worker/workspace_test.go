package worker_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/internal/forge"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/internal/workspace"
	"github.com/droverhq/drover/subjects"
)

// git runs git in dir with a private, clean configuration and returns its
// trimmed output; it fails the test on error.
func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := gitErr(t, dir, args...)
	require.NoError(t, err, "git %s: %s", strings.Join(args, " "), out)
	return out
}

func gitErr(t *testing.T, dir string, args ...string) (string, error) {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	home := filepath.Join(os.TempDir(), "drover-wstest-home")
	cmd.Env = append(os.Environ(), "HOME="+home, "XDG_CONFIG_HOME="+home, "GIT_CONFIG_NOSYSTEM=1", "GIT_TERMINAL_PROMPT=0",
		"GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@t", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@t")
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err
}

// remote makes a bare repository in a temp dir, with one commit on main
// (README and lib.txt), and returns its path and the commit.
func remote(t *testing.T) (string, string) {
	t.Helper()
	root := t.TempDir()
	src := filepath.Join(root, "src")
	git(t, root, "init", "-q", "-b", "main", src)
	require.NoError(t, os.WriteFile(filepath.Join(src, "README"), []byte("hello\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(src, "lib.txt"), []byte("one\ntwo\nthree\n"), 0o644))
	git(t, src, "add", "-A")
	git(t, src, "commit", "-q", "-m", "base")
	bare := filepath.Join(root, "remote.git")
	git(t, root, "clone", "-q", "--bare", src, bare)
	return bare, git(t, bare, "rev-parse", "refs/heads/main")
}

// agent is a scripted implementer and a recording judge: the implementer
// edits files in its worktree (edit), the judge approves unless reject
// says otherwise, and every call is counted and kept.
type agent struct {
	mu       sync.Mutex
	impl     []runner.Request
	judge    []runner.Request
	edit     func(t *testing.T, req runner.Request)
	reject   func(req runner.Request) bool
	onJudge  func(ctx context.Context, req runner.Request) error
	implSeen []map[string]string // files in the worktree when each implementer call began
	t        *testing.T
}

func (a *agent) set() runner.Set {
	sim := runner.NewSim(runner.SimOptions{})
	return runner.Set{
		Planner: sim,
		Implementer: runner.Func{ID: "scripted/v1", F: func(ctx context.Context, req runner.Request) (runner.Result, error) {
			a.mu.Lock()
			a.impl = append(a.impl, req)
			a.implSeen = append(a.implSeen, files(a.t, req.Workspace.Dir))
			a.mu.Unlock()
			a.edit(a.t, req)
			return runner.Result{Output: json.RawMessage(`{"change":"edited"}`), Action: "implemented", Reasoning: "edited the files"}, nil
		}},
		Judge: runner.Func{ID: "recording-judge/v1", F: func(ctx context.Context, req runner.Request) (runner.Result, error) {
			a.mu.Lock()
			a.judge = append(a.judge, req)
			a.mu.Unlock()
			if a.onJudge != nil {
				if err := a.onJudge(ctx, req); err != nil {
					return runner.Result{}, err
				}
			}
			if a.reject != nil && a.reject(req) {
				return runner.Result{Output: json.RawMessage(`{"verdict":"reject","feedback":"add more"}`), Action: subjects.VerdictReject, Reasoning: "add more"}, nil
			}
			return runner.Result{Output: json.RawMessage(`{"verdict":"approve"}`), Action: subjects.VerdictApprove, Reasoning: "fine"}, nil
		}},
	}
}

func (a *agent) implCalls() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.impl)
}

// files reads the worktree's files (not .git) by relative path.
func files(t *testing.T, dir string) map[string]string {
	out := map[string]string{}
	_ = filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Name() == ".git" {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.IsDir() {
			b, _ := os.ReadFile(p)
			rel, _ := filepath.Rel(dir, p)
			out[rel] = string(b)
		}
		return nil
	})
	return out
}

// editTask writes the task's own file and changes lib.txt.
func editTask(t *testing.T, req runner.Request) {
	dir := req.Workspace.Dir
	require.NoError(t, os.WriteFile(filepath.Join(dir, req.Task.ID+".txt"), fmt.Appendf(nil, "%s attempt %d\n", req.Task.ID, req.Attempt), 0o644))
	lib, err := os.ReadFile(filepath.Join(dir, "lib.txt"))
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "lib.txt"), append(lib, fmt.Appendf(nil, "%s/%d\n", req.Task.ID, req.Attempt)...), 0o644))
}

// wsBundle is a NATS server and a remote repository for workers with
// workspaces.
type wsBundle struct {
	srv   *broker.Embedded
	js    jetstream.JetStream
	names subjects.Names
	repo  string
	base  string
	// tweak, when set, adjusts each worker's workspace configuration.
	tweak func(*workspace.Config)
	// pullRequests and log, when set, are each worker's.
	pullRequests *forge.Client
	log          *slog.Logger
	// cacheScope and secrets, when set, are each worker's.
	cacheScope cache.Scope
	secrets    []string
	named      []redact.Secret
}

func newWSBundle(t *testing.T) *wsBundle {
	srv := natstest.Server(t, natstest.Sync(time.Second))
	_, js := natstest.Connect(t, srv.ClientURL())
	repo, base := remote(t)
	return &wsBundle{srv: srv, js: js, names: subjects.MustNames(subjects.DefaultPrefix), repo: repo, base: base}
}

// start runs a worker with workspaces under dir until stop is called (or
// the test ends).
func (b *wsBundle) start(t *testing.T, set runner.Set, dir string, push bool, grace time.Duration) (w *worker.Worker, stop func()) {
	t.Helper()
	nc, err := nats.Connect(b.srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	wc := workspace.Config{Repo: b.repo, Dir: dir, Push: push, PushDelay: 20 * time.Millisecond}
	if b.tweak != nil {
		b.tweak(&wc)
	}
	log := b.log
	if log == nil {
		log = natstest.Quiet()
	}
	w, err = worker.New(nc, worker.Config{
		Concurrency: 4, FetchWait: 200 * time.Millisecond, Grace: grace, Log: log, Runners: set,
		Consumer:     broker.ConsumerSettings{AckWait: 5 * time.Second},
		Pipeline:     pipeline.Config{RetryBase: 20 * time.Millisecond, RetryMax: 50 * time.Millisecond},
		Workspace:    wc,
		PullRequests: b.pullRequests,
		CacheScope:   b.cacheScope,
		Secrets:      b.secrets,
		NamedSecrets: b.named,
	})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); require.NoError(t, natstest.Recv(t, done, 30*time.Second)) }) }
	t.Cleanup(stop)
	select {
	case <-w.Started():
	case err := <-done:
		t.Fatalf("worker stopped at start: %v", err)
	}
	return w, stop
}

// submit publishes the tasks of workflow and returns their terminal
// events by task ID.
func (b *wsBundle) submit(t *testing.T, workflow string, reqs ...subjects.TaskRequest) map[string]subjects.AuditEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	after, err := producer.AuditLastSeq(ctx, b.js, b.names)
	require.NoError(t, err)
	for _, r := range reqs {
		r.Workflow = workflow
		_, err := producer.Publish(ctx, b.js, b.names, subjects.DefaultQueue, r)
		require.NoError(t, err)
	}
	out := map[string]subjects.AuditEvent{}
	require.NoError(t, producer.FollowTerminal(ctx, b.js, b.names, workflow, after, func(tm producer.Terminal) bool {
		out[tm.Event.TaskID] = tm.Event
		return len(out) < len(reqs)
	}))
	return out
}

// events returns a task's audit events of one type, in order.
func (b *wsBundle) events(t *testing.T, workflow, task string, et subjects.EventType) []subjects.AuditEvent {
	t.Helper()
	out, err := b.eventsOf(workflow, task, et)
	require.NoError(t, err)
	return out
}

// eventsOf is events for a wait's condition, which must not fail the test.
func (b *wsBundle) eventsOf(workflow, task string, et subjects.EventType) ([]subjects.AuditEvent, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []subjects.AuditEvent
	err := audit.Replay(ctx, b.js, b.names, audit.Query{Workflow: workflow, Task: task, Type: et}, func(r audit.Record) error {
		if r.Err != nil {
			return r.Err
		}
		out = append(out, r.Event)
		return nil
	})
	return out, err
}

// change decodes an implementer_change event's recorded change (small
// patches are inline).
func change(t *testing.T, ev subjects.AuditEvent) subjects.WorkspaceChange {
	t.Helper()
	var meta struct {
		Workspace subjects.WorkspaceChange `json:"workspace"`
	}
	require.NoError(t, json.Unmarshal(ev.Metadata, &meta), "metadata %s", ev.Metadata)
	require.NotEmpty(t, meta.Workspace.Head, "metadata %s", ev.Metadata)
	return meta.Workspace
}

// applyTree applies patch on base in a fresh clone of repo and returns the
// tree it gives.
func applyTree(t *testing.T, repo, base string, patch []byte) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "clone")
	git(t, filepath.Dir(dir), "clone", "-q", repo, dir)
	git(t, dir, "checkout", "-q", "--detach", base)
	p := filepath.Join(t.TempDir(), "change.patch")
	require.NoError(t, os.WriteFile(p, patch, 0o644))
	git(t, dir, "apply", "--index", p)
	return git(t, dir, "write-tree")
}

func taskState(t *testing.T, b *wsBundle, workflow, task string) state.Task {
	t.Helper()
	kv, err := b.js.KeyValue(context.Background(), b.names.StateBucket())
	require.NoError(t, err)
	st, err := state.New(kv).GetTask(context.Background(), workflow, task)
	require.NoError(t, err)
	return st
}

// The implementer's change is committed on the task's branch and recorded
// in its implementer_change event: the pinned base, the head, the files
// with lines added and removed, and a patch that applies to the base and
// gives the branch's tree. The approved branch is pushed, and the
// terminal event says so.
func TestWorkspaceChangeIsRecorded(t *testing.T) {
	b := newWSBundle(t)
	a := &agent{t: t, edit: func(t *testing.T, req runner.Request) {
		editTask(t, req)
		require.NoError(t, os.Remove(filepath.Join(req.Workspace.Dir, "README")))
	}}
	b.start(t, a.set(), t.TempDir(), true, 5*time.Second)
	term := b.submit(t, "wf-rec", subjects.TaskRequest{ID: "T1", Scope: "edit"})
	require.Equal(t, subjects.EventTaskCompleted, term["T1"].EventType, "%+v", term["T1"])

	changes := b.events(t, "wf-rec", "T1", subjects.EventImplementerChange)
	require.Len(t, changes, 1)
	ch := change(t, changes[0])
	require.Equal(t, b.base, ch.Base)
	require.Equal(t, "drover/wf-rec/T1", ch.Branch)
	require.False(t, ch.Empty)
	require.ElementsMatch(t, []subjects.WorkspaceFile{
		{Path: "README", Status: "D", Removed: 1},
		{Path: "T1.txt", Status: "A", Added: 1},
		{Path: "lib.txt", Status: "M", Added: 1},
	}, ch.Files)
	patch, err := ch.PatchData()
	require.NoError(t, err)
	require.Equal(t, git(t, b.repo, "rev-parse", "refs/heads/drover/wf-rec/T1^{tree}"), applyTree(t, b.repo, b.base, patch),
		"the recorded patch applied to the base gives the pushed branch's tree")
	require.Contains(t, git(t, b.repo, "log", "-1", "--format=%B", "refs/heads/drover/wf-rec/T1"), "Drover-Event: "+changes[0].EventID)

	var result struct {
		Workspace subjects.WorkspaceResult `json:"workspace"`
	}
	require.NoError(t, json.Unmarshal(term["T1"].Output, &result))
	require.Equal(t, subjects.WorkspaceResult{Branch: "drover/wf-rec/T1", Base: b.base,
		Head: git(t, b.repo, "rev-parse", "refs/heads/drover/wf-rec/T1"), Pushed: true}, result.Workspace)
	st := taskState(t, b, "wf-rec", "T1")
	require.NotNil(t, st.Workspace)
	require.Equal(t, b.base, st.Workspace.Base, "the base is pinned in the state")
	require.True(t, st.Workspace.Pushed)
}

// The judge's request carries the attempt's diff (stat and patch); a
// rejected attempt's next try starts from the first attempt's commit, with
// the judge's feedback, and both commits are on the branch.
func TestWorkspaceJudgeSeesTheDiffAndRetryBuildsOnIt(t *testing.T) {
	b := newWSBundle(t)
	a := &agent{t: t, edit: editTask, reject: func(req runner.Request) bool { return req.Attempt == 1 }}
	b.start(t, a.set(), t.TempDir(), true, 5*time.Second)
	term := b.submit(t, "wf-judge", subjects.TaskRequest{ID: "T1", Scope: "edit"})
	require.Equal(t, subjects.EventTaskCompleted, term["T1"].EventType, "%+v", term["T1"])

	require.Len(t, a.judge, 2)
	for i, j := range a.judge {
		require.NotNil(t, j.Workspace, "judge call %d", i)
		require.Contains(t, j.Workspace.Patch, fmt.Sprintf("+T1/%d", i+1), "the judge sees attempt %d's patch", i+1)
		require.Contains(t, j.Workspace.Stat, "lib.txt")
		require.NotEmpty(t, j.WorkspacePatch, "the patch is in the judge's key")
	}
	require.Len(t, a.impl, 2)
	require.Equal(t, "add more", a.impl[1].Feedback)
	require.Equal(t, "T1 attempt 1\n", a.implSeen[1]["T1.txt"], "attempt 2 starts from attempt 1's commit")
	require.Equal(t, "one\ntwo\nthree\nT1/1\n", a.implSeen[1]["lib.txt"])

	changes := b.events(t, "wf-judge", "T1", subjects.EventImplementerChange)
	require.Len(t, changes, 2)
	first, second := change(t, changes[0]), change(t, changes[1])
	require.Equal(t, first.Base, second.Base, "every attempt sees the same base")
	branch := "refs/heads/drover/wf-judge/T1"
	_, err := gitErr(t, b.repo, "merge-base", "--is-ancestor", first.Head, branch)
	require.NoError(t, err, "attempt 1's commit is on the branch")
	require.Equal(t, "2", git(t, b.repo, "rev-list", "--count", b.base+".."+branch))
}

// A cached re-run of the same tasks under a new workflow on the same base
// calls no implementer: each hit applies its recorded patch, and every
// branch has the first run's tree.
func TestWorkspaceCacheHitReplaysThePatch(t *testing.T) {
	b := newWSBundle(t)
	a := &agent{t: t, edit: editTask}
	b.start(t, a.set(), t.TempDir(), true, 5*time.Second)
	tasks := []subjects.TaskRequest{{ID: "T1", Scope: "one"}, {ID: "T2", Scope: "two"}}
	for _, tm := range b.submit(t, "wf-a", tasks...) {
		require.Equal(t, subjects.EventTaskCompleted, tm.EventType)
	}
	require.Equal(t, 2, a.implCalls())
	for _, tm := range b.submit(t, "wf-b", tasks...) {
		require.Equal(t, subjects.EventTaskCompleted, tm.EventType)
	}
	require.Equal(t, 2, a.implCalls(), "the re-run calls no implementer")
	for _, task := range []string{"T1", "T2"} {
		ev := b.events(t, "wf-b", task, subjects.EventImplementerChange)
		require.Len(t, ev, 1)
		require.True(t, ev[0].Cached)
		require.Equal(t, git(t, b.repo, "rev-parse", "refs/heads/drover/wf-a/"+task+"^{tree}"),
			git(t, b.repo, "rev-parse", "refs/heads/drover/wf-b/"+task+"^{tree}"), "identical tree on %s", task)
	}
}

// A cached change that no longer applies is a miss: the implementer runs
// again and the branch gets its real change, never a wrong one.
func TestWorkspaceCachedPatchThatDoesNotApplyIsAMiss(t *testing.T) {
	b := newWSBundle(t)
	a := &agent{t: t, edit: editTask}
	b.start(t, a.set(), t.TempDir(), true, 5*time.Second)
	require.Equal(t, subjects.EventTaskCompleted, b.submit(t, "wf-a", subjects.TaskRequest{ID: "T1", Scope: "one"})["T1"].EventType)

	// Spoil the cached result's patch: a context line that is not in the
	// base, with a digest that matches, so only applying it can tell.
	ctx := context.Background()
	key := taskState(t, b, "wf-a", "T1").Outputs[subjects.RoleImplementer]
	kv, err := b.js.KeyValue(ctx, b.names.CacheBucket())
	require.NoError(t, err)
	e, err := kv.Get(ctx, key)
	require.NoError(t, err)
	var res runner.Result
	require.NoError(t, json.Unmarshal(e.Value(), &res))
	raw, err := json.Marshal(res.Metadata["workspace"])
	require.NoError(t, err)
	var ch subjects.WorkspaceChange
	require.NoError(t, json.Unmarshal(raw, &ch))
	patch, err := ch.PatchData()
	require.NoError(t, err)
	spoiled := strings.Replace(string(patch), " two\n", " deux\n", 1)
	require.NotEqual(t, string(patch), spoiled)
	ch.SetPatch([]byte(spoiled))
	res.Metadata["workspace"] = ch
	v, err := json.Marshal(res)
	require.NoError(t, err)
	_, err = kv.Put(ctx, key, v)
	require.NoError(t, err)

	require.Equal(t, subjects.EventTaskCompleted, b.submit(t, "wf-b", subjects.TaskRequest{ID: "T1", Scope: "one"})["T1"].EventType)
	require.Equal(t, 2, a.implCalls(), "the spoiled hit was a miss")
	ev := b.events(t, "wf-b", "T1", subjects.EventImplementerChange)
	require.Len(t, ev, 1)
	require.False(t, ev[0].Cached)
	require.Equal(t, git(t, b.repo, "rev-parse", "refs/heads/drover/wf-a/T1^{tree}"),
		git(t, b.repo, "rev-parse", "refs/heads/drover/wf-b/T1^{tree}"))
}

// A worker that stops while the judge runs hands the task back with its
// implementer's change recorded; a new worker with its own workspace
// directory rebuilds the worktree from the pinned base and the recorded
// patch, the judge sees the same diff, and the implementer is not called
// again, even when the cache lost its result.
func TestWorkspaceResumesOnAnotherWorker(t *testing.T) {
	b := newWSBundle(t)
	judging := make(chan struct{})
	var once sync.Once
	a := &agent{t: t, edit: editTask}
	a.onJudge = func(ctx context.Context, req runner.Request) error {
		first := false
		once.Do(func() { first = true })
		if !first {
			return nil
		}
		close(judging)
		<-ctx.Done() // the first worker stops while its judge runs
		return ctx.Err()
	}
	set := a.set()
	dirA, dirB := t.TempDir(), t.TempDir()
	_, stopA := b.start(t, set, dirA, true, 50*time.Millisecond)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	after, err := producer.AuditLastSeq(ctx, b.js, b.names)
	require.NoError(t, err)
	_, err = producer.Publish(ctx, b.js, b.names, subjects.DefaultQueue, subjects.TaskRequest{Workflow: "wf-move", ID: "T1", Scope: "edit"})
	require.NoError(t, err)
	select {
	case <-judging:
	case <-ctx.Done():
		t.Fatal("the judge never ran")
	}
	stopA()
	st := taskState(t, b, "wf-move", "T1")
	require.Equal(t, string(subjects.RoleJudge), st.Stage, "the implementer's change was kept")
	// The cache loses the implementer's entry: the new worker reads the
	// recorded change from its implementer_change event.
	kv, err := b.js.KeyValue(ctx, b.names.CacheBucket())
	require.NoError(t, err)
	require.NoError(t, kv.Purge(ctx, st.Outputs[subjects.RoleImplementer]))

	b.start(t, set, dirB, true, 5*time.Second)
	var term subjects.AuditEvent
	require.NoError(t, producer.FollowTerminal(ctx, b.js, b.names, "wf-move", after, func(tm producer.Terminal) bool {
		term = tm.Event
		return false
	}))
	require.Equal(t, subjects.EventTaskCompleted, term.EventType, "%+v", term)
	require.Equal(t, 1, a.implCalls(), "the implementer is not called again")
	require.Len(t, a.judge, 2)
	require.Equal(t, a.judge[0].Workspace.Patch, a.judge[1].Workspace.Patch, "the judge sees the same diff")
	require.True(t, strings.HasPrefix(a.judge[1].Workspace.Dir, dirB), "the second judge runs in the new worker's worktree")
	ch := change(t, b.events(t, "wf-move", "T1", subjects.EventImplementerChange)[0])
	patch, err := ch.PatchData()
	require.NoError(t, err)
	require.Equal(t, applyTree(t, b.repo, b.base, patch), git(t, b.repo, "rev-parse", "refs/heads/drover/wf-move/T1^{tree}"))
}

// A push the remote refuses (a hook rejecting one branch) fails only that
// task, with reason push_rejected and one DLQ entry; the other task's
// branch is pushed, and the refused one is kept in the worker's mirror.
func TestWorkspacePushRejectedFailsOnlyThatTask(t *testing.T) {
	b := newWSBundle(t)
	hook := filepath.Join(b.repo, "hooks", "pre-receive")
	require.NoError(t, os.WriteFile(hook, []byte("#!/bin/sh\nwhile read old new ref; do\n  case \"$ref\" in\n    */BAD) echo \"refusing $ref\" >&2; exit 1;;\n  esac\ndone\nexit 0\n"), 0o755))
	a := &agent{t: t, edit: editTask}
	dir := t.TempDir()
	b.start(t, a.set(), dir, true, 5*time.Second)
	term := b.submit(t, "wf-push", subjects.TaskRequest{ID: "OK", Scope: "one"}, subjects.TaskRequest{ID: "BAD", Scope: "two"})
	require.Equal(t, subjects.EventTaskCompleted, term["OK"].EventType)
	require.Equal(t, subjects.EventTaskFailed, term["BAD"].EventType)
	require.Equal(t, string(subjects.ReasonPushRejected), term["BAD"].Action)
	require.Contains(t, term["BAD"].Error, "push")

	git(t, b.repo, "rev-parse", "--verify", "refs/heads/drover/wf-push/OK")
	_, err := gitErr(t, b.repo, "rev-parse", "--verify", "refs/heads/drover/wf-push/BAD")
	require.Error(t, err, "the refused branch is not on the remote")
	git(t, filepath.Join(dir, "mirror.git"), "rev-parse", "--verify", "refs/heads/drover/wf-push/BAD")

	ctx := context.Background()
	dlq, err := b.js.Stream(ctx, b.names.DLQStream())
	require.NoError(t, err)
	info, err := dlq.Info(ctx)
	require.NoError(t, err)
	require.Equal(t, uint64(1), info.State.Msgs, "one DLQ entry")
	m, err := dlq.GetLastMsgForSubject(ctx, b.names.DLQSubject(subjects.DefaultQueue))
	require.NoError(t, err)
	require.Equal(t, string(subjects.ReasonPushRejected), m.Header.Get(subjects.HeaderReason))
}

// A remote that is down when a task is approved delays its push: the task
// waits (heartbeating) while the pusher retries, then the branch is pushed
// and the task completes, nothing lost and nothing retried.
func TestWorkspaceRemoteDownDelaysThePush(t *testing.T) {
	b := newWSBundle(t)
	away := b.repo + ".away"
	var once sync.Once
	a := &agent{t: t, edit: editTask, onJudge: func(context.Context, runner.Request) error {
		once.Do(func() { require.NoError(t, os.Rename(b.repo, away)) }) // the remote goes down
		return nil
	}}
	w, _ := b.start(t, a.set(), t.TempDir(), true, 5*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	after, err := producer.AuditLastSeq(ctx, b.js, b.names)
	require.NoError(t, err)
	_, err = producer.Publish(ctx, b.js, b.names, subjects.DefaultQueue, subjects.TaskRequest{Workflow: "wf-down", ID: "T1", Scope: "s"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		m := w.Workspaces()
		return m != nil && m.Stats().PushRetries >= 2
	}, 30*time.Second, 10*time.Millisecond, "the push is retried while the remote is down")
	require.NoError(t, os.Rename(away, b.repo)) // and comes back

	var term subjects.AuditEvent
	require.NoError(t, producer.FollowTerminal(ctx, b.js, b.names, "wf-down", after, func(tm producer.Terminal) bool {
		term = tm.Event
		return false
	}))
	require.Equal(t, subjects.EventTaskCompleted, term.EventType, "%+v", term)
	require.Empty(t, b.events(t, "wf-down", "T1", subjects.EventTaskRetried))
	var result struct {
		Workspace subjects.WorkspaceResult `json:"workspace"`
	}
	require.NoError(t, json.Unmarshal(term.Output, &result))
	require.True(t, result.Workspace.Pushed)
	require.Equal(t, result.Workspace.Head, git(t, b.repo, "rev-parse", "refs/heads/drover/wf-down/T1"))
}

// A task paused after its implementer frees its worktree but keeps its
// branch and its recorded change; resumed, it continues from the judge on
// a worktree rebuilt from them, without calling the implementer again.
func TestWorkspacePausedTaskFreesItsWorktree(t *testing.T) {
	b := newWSBundle(t)
	nc, _ := natstest.Connect(t, b.srv.ClientURL())
	control := func(action string) {
		m, err := nc.Request(b.names.CtlSubject("wf-pause", action), []byte(`{"reason":"test"}`), 30*time.Second)
		require.NoError(t, err)
		require.NotContains(t, string(m.Data), `"error"`)
	}
	var once sync.Once
	a := &agent{t: t, edit: func(t *testing.T, req runner.Request) {
		editTask(t, req)
		once.Do(func() { control("pause") }) // the gate before the judge parks it
	}}
	dir := t.TempDir()
	w, _ := b.start(t, a.set(), dir, true, 5*time.Second)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	after, err := producer.AuditLastSeq(ctx, b.js, b.names)
	require.NoError(t, err)
	_, err = producer.Publish(ctx, b.js, b.names, subjects.DefaultQueue, subjects.TaskRequest{Workflow: "wf-pause", ID: "T1", Scope: "s"})
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		kv, err := b.js.KeyValue(ctx, b.names.StateBucket())
		if err != nil {
			return false
		}
		st, err := state.New(kv).GetTask(ctx, "wf-pause", "T1")
		return err == nil && st.State == subjects.StatePaused
	}, 30*time.Second, 10*time.Millisecond)
	st := taskState(t, b, "wf-pause", "T1")
	require.Equal(t, string(subjects.RoleJudge), st.Stage)
	require.Len(t, st.Workspace.Attempts, 1, "the recorded change is kept")
	require.Eventually(t, func() bool { return w.Workspaces().Stats().Open == 0 }, 30*time.Second, 10*time.Millisecond, "the worktree is freed")
	require.Equal(t, st.Workspace.Attempts[0].Head, git(t, filepath.Join(dir, "mirror.git"), "rev-parse", "refs/heads/drover/wf-pause/T1"), "the branch is kept")

	control("resume")
	var term subjects.AuditEvent
	require.NoError(t, producer.FollowTerminal(ctx, b.js, b.names, "wf-pause", after, func(tm producer.Terminal) bool {
		term = tm.Event
		return false
	}))
	require.Equal(t, subjects.EventTaskCompleted, term.EventType, "%+v", term)
	require.Equal(t, 1, a.implCalls())
	require.Len(t, a.judge, 1)
	require.Contains(t, a.judge[0].Workspace.Patch, "+T1/1")
}

// With the sim everywhere (no agent), tasks in workspaces still produce
// real branches: each holds its own file and one line of the shared file
// from the pinned base; the sim judge's verdict shows the diff stat; and
// a cached re-run under a new workflow calls no implementer and gives the
// same trees.
func TestWorkspaceWithTheSim(t *testing.T) {
	b := newWSBundle(t)
	sim := runner.NewSim(runner.SimOptions{})
	b.start(t, runner.SimSet(sim), t.TempDir(), true, 5*time.Second)
	tasks := []subjects.TaskRequest{{ID: "T1", Scope: "one"}, {ID: "T2", Scope: "two"}, {ID: "T3", Scope: "three"}}
	for _, tm := range b.submit(t, "wf-sim", tasks...) {
		require.Equal(t, subjects.EventTaskCompleted, tm.EventType, "%+v", tm)
	}
	for _, task := range []string{"T1", "T2", "T3"} {
		ref := "refs/heads/drover/wf-sim/" + task
		require.Equal(t, task+" attempt 1", git(t, b.repo, "show", ref+":drover-sim/shared.txt"))
		require.Contains(t, git(t, b.repo, "show", ref+":"+runner.SimFile(task)), "task "+task)
		require.Equal(t, "1", git(t, b.repo, "rev-list", "--count", b.base+".."+ref))
		verdict := b.events(t, "wf-sim", task, subjects.EventJudgeVerdict)[0]
		var v struct{ Diff string }
		require.NoError(t, json.Unmarshal(verdict.Output, &v))
		require.Contains(t, v.Diff, "A drover-sim/shared.txt | +1 -0\n2 files changed", "the sim judge saw the diff")
	}
	calls := sim.Calls(subjects.RoleImplementer)
	for _, tm := range b.submit(t, "wf-sim-again", tasks...) {
		require.Equal(t, subjects.EventTaskCompleted, tm.EventType)
	}
	require.Equal(t, calls, sim.Calls(subjects.RoleImplementer), "no implementer call on the re-run")
	for _, task := range []string{"T1", "T2", "T3"} {
		require.Equal(t, git(t, b.repo, "rev-parse", "refs/heads/drover/wf-sim/"+task+"^{tree}"),
			git(t, b.repo, "rev-parse", "refs/heads/drover/wf-sim-again/"+task+"^{tree}"))
	}
}

// A patch over the blob limit is recorded through the blob store (the
// event holds a reference), and still replays: a cached re-run applies it
// from the blob and gives the same tree.
func TestWorkspaceLargePatchGoesThroughTheBlobStore(t *testing.T) {
	b := newWSBundle(t)
	a := &agent{t: t, edit: func(t *testing.T, req runner.Request) {
		line := strings.Repeat("all work and no play makes a large patch ", 3) + "\n"
		require.NoError(t, os.WriteFile(filepath.Join(req.Workspace.Dir, "big.txt"), []byte(strings.Repeat(line, 4000)), 0o644))
	}}
	b.start(t, a.set(), t.TempDir(), true, 5*time.Second)
	require.Equal(t, subjects.EventTaskCompleted, b.submit(t, "wf-big", subjects.TaskRequest{ID: "T1", Scope: "s"})["T1"].EventType)
	ev := b.events(t, "wf-big", "T1", subjects.EventImplementerChange)[0]
	var meta struct {
		Workspace struct {
			Patch       json.RawMessage `json:"patch"`
			PatchBytes  int             `json:"patch_bytes"`
			PatchSHA256 string          `json:"patch_sha256"`
			Head        string          `json:"head"`
		} `json:"workspace"`
	}
	require.NoError(t, json.Unmarshal(ev.Metadata, &meta))
	require.Greater(t, meta.Workspace.PatchBytes, 64<<10)
	require.Contains(t, string(meta.Workspace.Patch), `"blob"`, "the patch is a blob reference in the event")
	require.NotEmpty(t, meta.Workspace.Head)

	require.Equal(t, subjects.EventTaskCompleted, b.submit(t, "wf-big-again", subjects.TaskRequest{ID: "T1", Scope: "s"})["T1"].EventType)
	require.Equal(t, 1, a.implCalls(), "the re-run replays the patch from the blob")
	require.Equal(t, git(t, b.repo, "rev-parse", "refs/heads/drover/wf-big/T1^{tree}"), git(t, b.repo, "rev-parse", "refs/heads/drover/wf-big-again/T1^{tree}"))
}
