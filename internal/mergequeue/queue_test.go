package mergequeue_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// twelve makes 12 approved branches on main's head, enqueued in order: each
// writes its own file; t02 and t05 rewrite common.txt's first line, t08 and
// t09 its fifth (t05 and t09 conflict), and t11 adds BROKEN, which the
// check refuses. It returns the tasks and the three culprits' first heads.
func twelve(b *bundle) (tasks []string, culprits map[string]string) {
	base := git(b.t, b.clone, "rev-parse", "origin/main")
	culprits = map[string]string{}
	for i := range 12 {
		task := fmt.Sprintf("t%02d", i)
		files := map[string]string{task + ".txt": "task " + task + "\n"}
		switch i {
		case 2, 5:
			files["common.txt"] = strings.Replace(commonLines, "line 1\n", task+" was here\n", 1)
		case 8, 9:
			files["common.txt"] = strings.Replace(commonLines, "line 5\n", task+" was here\n", 1)
		case 11:
			files["BROKEN"] = "the check fails on this\n"
		}
		head := b.branch(task, base, files)
		if i == 5 || i == 9 || i == 11 {
			culprits[task] = head
		}
		tasks = append(tasks, task)
		b.enqueue(task, head, 1)
	}
	return tasks, culprits
}

// TestTwoMergersTwelveBranches: two merger processes, 12 approved
// branches, 3 culprits sent back and fixed by the sim; main ends with all
// 12, pushed far fewer than 12 times, by sessions that never overlapped,
// nothing merged twice.
func TestTwoMergersTwelveBranches(t *testing.T) {
	t.Parallel()
	b := setup(t, []string{"test", "!", "-e", "BROKEN"}, 4)
	tasks, culprits := twelve(b)
	b.start("w1")
	b.start("w2")

	assert.Eventually(t, func() bool { return b.doneTasks() == 12 }, 2*time.Minute, 50*time.Millisecond)
	require.Equal(t, 12, b.doneTasks())

	main := b.checkTarget(tasks)
	for task, first := range culprits {
		_, err := gitTry(b.remote, "merge-base", "--is-ancestor", first, main)
		require.Error(t, err, "culprit %s's first attempt reached main", task)
		b.mu.Lock()
		require.Len(t, b.back[task], 1, "task %s", task)
		require.Len(t, b.merged[task], 1, "task %s", task)
		b.mu.Unlock()
	}
	b.mu.Lock()
	require.Len(t, b.back, 3)
	require.Contains(t, b.back["t05"][0], "conflict")
	require.Contains(t, b.back["t11"][0], "merge check")
	b.mu.Unlock()
	common := git(t, b.remote, "show", "main:common.txt")
	require.Contains(t, common, "t02 was here")
	require.Contains(t, common, "t08 was here")
	require.Equal(t, "task t05 fixed", git(t, b.remote, "show", "main:t05.txt"))
	_, err := gitTry(b.remote, "cat-file", "-e", "main:BROKEN")
	require.Error(t, err)

	pushes := b.mainPushes()
	t.Logf("pushes to main for 12 branches (3 sent back once): %d", pushes)
	require.LessOrEqual(t, pushes, 6)
	reflog := strings.Split(git(t, b.remote, "reflog", "show", "--format=%H", "main"), "\n")
	require.Len(t, reflog, pushes+1, "the remote's reflog of main")

	log := b.checkSessions()
	holders := map[string]bool{}
	for _, r := range log {
		holders[r.Holder] = true
	}
	t.Logf("merge log: %d records, holders %v", len(log), holders)
}

// TestKillMergingWorker: the merger in the middle of a batch is killed
// with SIGKILL; the other takes over once the lease expires and main ends
// with every change, sound and merged once.
func TestKillMergingWorker(t *testing.T) {
	t.Parallel()
	// The check marks that it runs, then waits for the release file.
	check := []string{"sh", "-c", `touch "$MQ_MARK/checking.$MQ_HOLDER"; while [ ! -e "$MQ_MARK/release" ]; do sleep 0.05; done`}
	b := setup(t, check, 8)
	base := git(t, b.clone, "rev-parse", "origin/main")
	var tasks []string
	for i := range 6 {
		task := fmt.Sprintf("k%02d", i)
		b.enqueue(task, b.branch(task, base, map[string]string{task + ".txt": "task " + task + "\n"}), 1)
		tasks = append(tasks, task)
	}
	b.start("w1")
	assert.Eventually(t, func() bool {
		_, err := os.Stat(filepath.Join(b.root, "checking.w1"))
		return err == nil
	}, time.Minute, 20*time.Millisecond)
	b.start("w2")
	b.kill("w1")
	require.NoError(t, os.WriteFile(filepath.Join(b.root, "release"), nil, 0o644))

	assert.Eventually(t, func() bool { return b.doneTasks() == 6 }, 2*time.Minute, 50*time.Millisecond)
	require.Equal(t, 6, b.doneTasks())
	b.checkTarget(tasks)
	require.Equal(t, 1, b.mainPushes())
	log := b.checkSessions("w1")
	var w2 bool
	for _, r := range log {
		w2 = w2 || r.Holder == "w2" && len(r.Merged) == 6
	}
	require.True(t, w2, "w2 merged the batch w1 held")
}
