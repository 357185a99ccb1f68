package tests

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/forge/forgetest"
	"github.com/droverhq/drover/subjects"
)

// crashRow is one instant of a workspace task's life at which its worker
// is killed (SIGKILL): a worker B with its own workspace directory then
// finishes the task.
type crashRow struct {
	name string
	// a shapes worker A's options and arguments; kill waits for the
	// instant, once the task is submitted (A is killed right after).
	a    func(c *crash, o *wsOptions) []string
	kill func(c *crash, a *proc)
	// impl and judge are the agent's calls for the task, including the
	// one cut short by the kill: a finished call is never made again.
	impl, judge int
	// writes is how many times the branch was written on the remote.
	writes int
	// pr: delivery pull_request (one request at the end); merge: delivery
	// merge (the change merged into main once).
	pr, merge bool
}

// crash is one row's run.
type crash struct {
	*wsRig
	t        *testing.T
	simLog   string // the sim's call log (the planner)
	release  string // a file every waiting agent, judge and hook waits for
	forge    *forgetest.Server
	opened   chan struct{} // the forge got the first create
	unblock  func()        // lets the forge answer the first create (once)
	checking string        // the merge check creates it as it starts
}

// pushHook makes the remote's first push of a branch wait, after the ref
// is updated and before the push returns, until c.release exists; it
// touches landed then.
func (c *crash) pushHook(landed string) {
	c.remote.hook("post-receive", fmt.Sprintf(`#!/bin/sh
refs=$(awk '{print $3}' | tr '\n' ' ')
echo "push $refs" >>%q
if [ ! -e %[2]q ]; then
	touch %[2]q
	while [ ! -e %[3]q ]; do sleep 0.05; done
fi
`, c.remote.log, landed, c.release))
}

var crashRows = []crashRow{
	{
		name: "after the planner",
		a:    func(*crash, *wsOptions) []string { return []string{"--fault-stop-after-commits", "1"} },
		kill: func(c *crash, a *proc) { c.eventually(a.stopped, "A stops after its first write") },
		impl: 1, judge: 1, writes: 1,
	},
	{
		name: "during the implementer",
		a:    func(c *crash, o *wsOptions) []string { o.agentWait = c.release; return nil },
		kill: func(c *crash, _ *proc) {
			c.eventually(func() bool { return c.agentCalls()["edit-1"] == 1 }, "A's implementer runs")
		},
		impl: 2, judge: 1, writes: 1,
	},
	{
		name: "right after the implementer returns",
		a:    func(*crash, *wsOptions) []string { return []string{"--fault-stop-after-commits", "2"} },
		kill: func(c *crash, a *proc) { c.eventually(a.stopped, "A stops after recording the implementer") },
		impl: 1, judge: 1, writes: 1,
	},
	{
		name: "during the judge",
		a:    func(c *crash, o *wsOptions) []string { o.judgeWait = c.release; return nil },
		kill: func(c *crash, _ *proc) {
			c.eventually(func() bool { return c.judgeCalls("edit-1") == 1 }, "A's judge runs")
		},
		impl: 1, judge: 2, writes: 1,
	},
	{
		// The remote has A's head when A dies: B's own commit of the
		// same change replaces it, leased on the head A recorded.
		name: "during the push",
		a: func(c *crash, _ *wsOptions) []string {
			c.pushHook(filepath.Join(c.t.TempDir(), "landed"))
			return nil
		},
		kill: func(c *crash, _ *proc) {
			c.eventually(func() bool { return c.remote.pushCount() == 1 }, "A's push lands")
		},
		impl: 1, judge: 1, writes: 2,
	},
	{
		name: "after the push, before the terminal event",
		a:    func(*crash, *wsOptions) []string { return []string{"--fault-stop-after-commits", "4"} },
		kill: func(c *crash, a *proc) { c.eventually(a.stopped, "A stops after recording the completion") },
		impl: 1, judge: 1, writes: 1,
	},
}

// The crash matrix of a workspace task: at each instant, with the cache on
// and off, the task completes once on another worker, no finished agent
// call is made again (the agent counts its calls), the branch has the
// recorded change, and the fault suite's oracle holds.
func TestCrashMatrix(t *testing.T) {
	t.Parallel()
	for _, row := range crashRows {
		for _, noCache := range []bool{false, true} {
			t.Run(fmt.Sprintf("%s/cache=%v", row.name, !noCache), func(t *testing.T) {
				t.Parallel()
				runCrash(t, row, noCache)
			})
		}
	}
}

// A worker killed while its pull request is being opened (delivery
// pull_request, no review gate): the next worker runs no role again, and
// the task ends with one pull request. With the cache on and off.
func TestCrashMatrixPullRequest(t *testing.T) {
	t.Setenv(prTokenEnv, "crash-token")
	row := crashRow{
		name: "during the pull request's creation", pr: true,
		kill: func(c *crash, _ *proc) {
			select {
			case <-c.opened:
			case <-time.After(60 * time.Second):
				c.t.Fatal("the request was never opened")
			}
		},
		impl: 1, judge: 1, writes: 1,
	}
	for _, noCache := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache=%v", !noCache), func(t *testing.T) { runCrash(t, row, noCache) })
	}
}

// A worker killed while its merger runs the merge check of the task's
// branch (delivery merge): the other worker's merger takes the target
// over, and the change is merged into main once; no role runs again.
func TestCrashMatrixMerge(t *testing.T) {
	t.Parallel()
	row := crashRow{
		name: "during a merge", merge: true,
		kill: func(c *crash, _ *proc) {
			c.eventually(func() bool { _, err := os.Stat(c.checking); return err == nil }, "A's merger runs the check")
		},
		impl: 1, judge: 1, writes: 1,
	}
	for _, noCache := range []bool{false, true} {
		t.Run(fmt.Sprintf("cache=%v", !noCache), func(t *testing.T) {
			t.Parallel()
			runCrash(t, row, noCache)
		})
	}
}

func (c *crash) eventually(cond func() bool, what string) {
	c.t.Helper()
	require.Eventually(c.t, cond, 60*time.Second, 10*time.Millisecond, what)
}

func runCrash(t *testing.T, row crashRow, noCache bool) {
	r := newWSRig(t)
	c := &crash{wsRig: r, t: t, simLog: filepath.Join(t.TempDir(), "sim.jsonl"), release: filepath.Join(t.TempDir(), "release")}
	t.Cleanup(func() { _ = os.WriteFile(c.release, nil, 0o644) }) // nothing left waiting, whatever happens
	oA := wsOptions{execJudge: true, pushDelay: "100ms", noCache: noCache}
	oB := oA
	if row.pr {
		c.forge = forgetest.New(t, "github", "acme/app", "crash-token")
		c.opened = make(chan struct{})
		blocked := make(chan struct{})
		var once, unblock sync.Once
		c.unblock = func() { unblock.Do(func() { close(blocked) }) }
		t.Cleanup(c.unblock) // before the fake's Close, which waits for its handlers
		c.forge.AfterCreate(func() {
			first := false
			once.Do(func() { first = true })
			if first {
				close(c.opened)
				<-blocked // the answer never reaches A
			}
		})
		oA.extra = fmt.Sprintf("delivery: pull_request\npull_request: {forge: github, api_url: %q, repo: acme/app, base: main, token_env: %s}\n",
			c.forge.APIURL(), prTokenEnv)
		oB.extra = oA.extra
	}
	if row.merge {
		dir := t.TempDir()
		c.checking = filepath.Join(dir, "checking")
		merge := func(check string) string {
			return "delivery: merge\nmerge: {target: main, batch: 8, lease_ttl: 2s, check: {argv: " + check + ", timeout: 2m}}\n"
		}
		// The check runs in the sandbox: it says it started through a
		// recorder, and sees the release file's directory read-only.
		rec := newRecorder(t, dir)
		oA.extra = merge(fmt.Sprintf(`[sh, -c, 'curl -fsS --noproxy "*" --max-time 30 --data-binary "" "$0"; while [ ! -e "$1" ]; do sleep 0.05; done', %q, %q]`,
			rec.URL(t, c.checking), c.release))
		oA.readOnly = []string{filepath.Dir(c.release)}
		oB.extra = merge("[sh, -c, 'exit 0']")
	}
	var argsA []string
	if row.a != nil {
		argsA = row.a(c, &oA)
	}
	a := r.startWSProc("A", oA, append([]string{"--sim-call-log", c.simLog}, argsA...)...)
	after := r.submit(task("crash", "edit-1"))
	row.kill(c, a)
	a.signal(syscall.SIGKILL)
	require.Error(t, a.wait(30*time.Second))

	r.startWSProc("B", oB, "--sim-call-log", c.simLog)
	res := wsResult(t, r.waitTerminal("crash", after, 1)["edit-1"])
	require.NoError(t, os.WriteFile(c.release, nil, 0o644))
	if c.unblock != nil {
		c.unblock()
	}
	r.oracle()

	require.Equal(t, 1, countCalls(calls(t, c.simLog), "edit-1", subjects.RolePlanner), "the planner ran once")
	require.Equal(t, row.impl, r.agentCalls()["edit-1"], "implementer calls")
	require.Equal(t, row.judge, r.judgeCalls("edit-1"), "judge calls")
	rec := r.recorded("crash", "edit-1")
	require.Len(t, rec, 1, "one recorded attempt")
	clone := r.remote.clone()
	patch := filepath.Join(t.TempDir(), "edit-1.patch")
	require.NoError(t, os.WriteFile(patch, []byte(rec[1].Patch), 0o644))
	gitIn(t, clone, "apply", "--index", patch)
	require.Equal(t, gitIn(t, clone, "write-tree"), r.remote.tree(res.Branch), "the branch holds the recorded change")
	require.True(t, res.Pushed)
	require.Equal(t, []string{res.Branch}, r.remote.branches("drover/crash/"), "one branch")
	require.Equal(t, res.Head, r.remote.rev("refs/heads/"+res.Branch), "its head is the task's")
	// A redelivery's commit of the recorded change may have its own id
	// (a write more, leased on the head recorded) or the same.
	require.LessOrEqual(t, len(r.remote.reflog(res.Branch)), row.writes, "branch writes")
	if row.merge {
		commit, head := mergedTo(t, r.waitTerminal("crash", after, 1)["edit-1"])
		require.Equal(t, res.Head, head)
		_, err := gitTry(r.remote.dir, "merge-base", "--is-ancestor", commit, "refs/heads/main")
		require.NoError(t, err, "the merged commit is in main")
		trailers := gitIn(t, r.remote.dir, "log", "--format=%(trailers:key=Drover-Merge-Head,valueonly)", "main")
		require.Equal(t, head, strings.TrimSpace(trailers), "merged once")
	}
	if row.pr {
		require.Len(t, c.forge.Pulls(), 1, "one pull request")
		require.Equal(t, 1, prOf(t, r.waitTerminal("crash", after, 1)["edit-1"]).Number)
	}
}
