package mergequeue_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/mergequeue"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

func git(t testing.TB, dir string, args ...string) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs git: not run with -short")
	}
	out, err := gitTry(dir, args...)
	require.NoError(t, err)
	return out
}

func gitTry(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
	cmd.Env = append(os.Environ(), "GIT_CONFIG_NOSYSTEM=1", "GIT_CONFIG_GLOBAL=/dev/null", "HOME="+dir,
		"GIT_TERMINAL_PROMPT=0", "GIT_AUTHOR_NAME=fixture", "GIT_AUTHOR_EMAIL=fixture@example.invalid",
		"GIT_COMMITTER_NAME=fixture", "GIT_COMMITTER_EMAIL=fixture@example.invalid")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, stderr.String())
	}
	return strings.TrimSpace(string(out)), nil
}

// bundle is a bare remote (reflogs on, a post-receive hook logging each
// push), a clone the test makes branches in, a NATS server and the merger
// processes.
type bundle struct {
	t      testing.TB
	root   string
	remote string
	pushes string // the post-receive log: one line per push, its refs
	clone  string
	url    string
	js     jetstream.JetStream
	nc     *nats.Conn
	names  mergequeue.Names
	check  []string
	batch  int

	mu     sync.Mutex
	merged map[string][]string // task -> target commits reported
	back   map[string][]string // task -> feedback
	heads  map[string]string   // task -> head of its last attempt
	procs  map[string]*exec.Cmd
}

// commonLines is common.txt of the first commit.
const commonLines = "line 1\nline 2\nline 3\nline 4\nline 5\nline 6\nline 7\nline 8\n"

func setup(t testing.TB, check []string, batch int) *bundle {
	root := t.TempDir()
	b := &bundle{t: t, root: root, remote: filepath.Join(root, "remote.git"), pushes: filepath.Join(root, "pushes.log"),
		clone: filepath.Join(root, "clone"), check: check, batch: batch,
		merged: map[string][]string{}, back: map[string][]string{}, heads: map[string]string{}, procs: map[string]*exec.Cmd{}}
	git(t, root, "init", "-q", "--bare", "-b", "main", b.remote)
	git(t, b.remote, "config", "core.logAllRefUpdates", "always")
	hook := filepath.Join(b.remote, "hooks", "post-receive")
	require.NoError(t, os.WriteFile(hook, []byte(fmt.Sprintf("#!/bin/sh\nrefs=$(awk '{print $3}' | tr '\\n' ' ')\necho \"push $refs\" >>%q\n", b.pushes)), 0o755))
	git(t, root, "clone", "-q", b.remote, b.clone)
	git(t, b.clone, "checkout", "-q", "-b", "main")
	b.write("common.txt", commonLines)
	git(t, b.clone, "add", "-A")
	git(t, b.clone, "commit", "-q", "-m", "first")
	git(t, b.clone, "push", "-q", "origin", "main")

	srv := natstest.Server(t)
	b.url = srv.ClientURL()
	b.nc, b.js = natstest.Connect(t, b.url)
	b.names = mergequeue.NewNames(subjects.MustNames(subjects.DefaultPrefix))
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, _, err := mergequeue.Provision(ctx, b.js, b.names, mergequeue.Config{Target: "main", LeaseTTL: 2 * time.Second, Batch: batch})
	require.NoError(t, err)
	b.serve()
	return b
}

func (b *bundle) write(name, body string) {
	require.NoError(b.t, os.WriteFile(filepath.Join(b.clone, name), []byte(body), 0o644))
}

// branch makes task's branch on base with files written and pushes it.
func (b *bundle) branch(task, base string, files map[string]string) string {
	head, err := b.branchE(task, base, files)
	require.NoError(b.t, err)
	return head
}

func (b *bundle) branchE(task, base string, files map[string]string) (string, error) {
	if _, err := gitTry(b.clone, "checkout", "-q", "-f", "-B", task, base); err != nil {
		return "", err
	}
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(b.clone, name), []byte(body), 0o644); err != nil {
			return "", err
		}
	}
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "task " + task}} {
		if _, err := gitTry(b.clone, args...); err != nil {
			return "", err
		}
	}
	head, err := gitTry(b.clone, "rev-parse", "HEAD")
	if err != nil {
		return "", err
	}
	_, err = gitTry(b.clone, "push", "-q", "-f", "origin", task)
	return head, err
}

// enqueue puts task's head in the queue as attempt.
func (b *bundle) enqueue(task, head string, attempt int) {
	require.NoError(b.t, b.enqueueE(task, head, attempt))
}

func (b *bundle) enqueueE(task, head string, attempt int) error {
	b.mu.Lock()
	b.heads[task] = head
	b.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return mergequeue.Enqueue(ctx, b.js, b.names, mergequeue.Entry{
		Workflow: "wf", Task: task, Branch: task, Head: head, Attempt: attempt, Target: "main"})
}

// serve answers the mergers' sinks: a merged task is recorded, a task sent
// back is fixed (the implementer's next attempt, on the new base) and
// enqueued again.
func (b *bundle) serve() {
	_, err := b.nc.Subscribe("mqtest.merged", func(msg *nats.Msg) {
		var o outcome
		_ = json.Unmarshal(msg.Data, &o)
		b.mu.Lock()
		b.merged[o.Entry.Task] = append(b.merged[o.Entry.Task], o.Commit)
		b.mu.Unlock()
		_ = msg.Respond(nil)
	})
	require.NoError(b.t, err)
	_, err = b.nc.Subscribe("mqtest.back", func(msg *nats.Msg) {
		var o outcome
		_ = json.Unmarshal(msg.Data, &o)
		b.mu.Lock()
		b.back[o.Entry.Task] = append(b.back[o.Entry.Task], o.Feedback)
		b.mu.Unlock()
		// The sim implementer's next attempt: its own file only, on the
		// new base.
		_, err := gitTry(b.clone, "fetch", "-q", "origin")
		var head string
		if err == nil {
			head, err = b.branchE(o.Entry.Task, o.Commit, map[string]string{o.Entry.Task + ".txt": "task " + o.Entry.Task + " fixed\n"})
		}
		if err == nil {
			err = b.enqueueE(o.Entry.Task, head, o.Entry.Attempt+1)
		}
		if err != nil {
			b.t.Errorf("the sim's next attempt of %s: %v", o.Entry.Task, err)
			return
		}
		_ = msg.Respond(nil)
	})
	require.NoError(b.t, err)
}

// start starts a merger process named holder.
func (b *bundle) start(holder string) {
	check, _ := json.Marshal(b.check)
	logf, err := os.Create(filepath.Join(b.root, holder+".log"))
	require.NoError(b.t, err)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "MQ_NATS="+b.url, "MQ_REMOTE="+b.remote,
		"MQ_DIR="+filepath.Join(b.root, "ws-"+holder), "MQ_HOLDER="+holder, "MQ_CHECK="+string(check),
		fmt.Sprintf("MQ_BATCH=%d", b.batch), "MQ_MARK="+b.root)
	cmd.Stdout, cmd.Stderr = logf, logf
	require.NoError(b.t, cmd.Start())
	b.procs[holder] = cmd
	b.t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM)
		done := make(chan struct{})
		go func() { _ = cmd.Wait(); close(done) }()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			_ = cmd.Process.Kill()
			<-done
		}
		_ = logf.Close() // a log the test has read or will not
		if b.t.Failed() {
			out, _ := os.ReadFile(logf.Name())
			b.t.Logf("%s:\n%s", holder, out)
		}
	})
}

// kill sends SIGKILL to holder's process.
func (b *bundle) kill(holder string) {
	require.NoError(b.t, b.procs[holder].Process.Kill())
}

// mainPushes counts the pushes that moved main after the first one.
func (b *bundle) mainPushes() int {
	data, err := os.ReadFile(b.pushes)
	require.NoError(b.t, err)
	n := 0
	for _, line := range strings.Split(string(data), "\n") {
		if strings.Contains(line, "refs/heads/main") {
			n++
		}
	}
	return n - 1
}

// doneTasks is the number of tasks reported merged.
func (b *bundle) doneTasks() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.merged)
}

// checkSessions asserts that no two sessions overlapped in the merge log:
// a start comes only when no session is open, or the open one's holder is
// in killed (its lease expired); batches and ends belong to the open one.
func (b *bundle) checkSessions(killed ...string) []mergequeue.LogRecord {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log, err := mergequeue.ReadLog(ctx, b.js, b.names, "main")
	require.NoError(b.t, err)
	if len(log) > 0 { // reading it leaves no consumer behind
		st, err := b.js.Stream(ctx, b.names.LogStream())
		require.NoError(b.t, err)
		require.Zero(b.t, st.CachedInfo().State.Consumers, "ReadLog deletes its consumer")
	}
	open := ""
	for i, r := range log {
		switch r.Kind {
		case mergequeue.LogStart:
			if open != "" {
				require.Contains(b.t, killed, open, "record %d: %s started while %s's session was open", i, r.Holder, open)
			}
			open = r.Holder
		case mergequeue.LogBatch:
			require.Equal(b.t, open, r.Holder, "record %d: a batch outside its holder's session", i)
		case mergequeue.LogEnd:
			require.Equal(b.t, open, r.Holder, "record %d: an end of a session not open", i)
			open = ""
		}
	}
	return log
}

// checkTarget asserts the remote's main: a sound repository, each task's
// last head in it once and only once.
func (b *bundle) checkTarget(tasks []string) string {
	git(b.t, b.remote, "fsck", "--no-dangling")
	main := git(b.t, b.remote, "rev-parse", "main")
	body := git(b.t, b.remote, "log", "--format=%B", "main")
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, task := range tasks {
		head := b.heads[task]
		_, err := gitTry(b.remote, "merge-base", "--is-ancestor", head, main)
		require.NoError(b.t, err, "task %s head %s not in main", task, head)
		require.Equal(b.t, 1, strings.Count(body, "Drover-Merge-Head: "+head), "task %s merged %d times", task)
		for _, c := range b.merged[task] {
			_, err := gitTry(b.remote, "merge-base", "--is-ancestor", head, c)
			require.NoError(b.t, err, "task %s: reported commit %s does not hold it", task, c)
		}
	}
	return main
}
