package workspace

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// BenchmarkTaskOverhead measures a task's workspace overhead (Open, a
// one-file change committed and recorded with its patch, Release: everything
// but the agent) on a small repository and on one of 10,000 files and about
// 50 MB, beside a plain `git worktree add` and a naive `git add -A && git
// commit && git diff` of the same repository in the same run. It reports
// p50 and p99 of each in ms. The -agent-commits runs have the agent commit
// the change itself, to its private object store (untimed), so Commit
// imports it. Run it with
//
//	go test ./internal/workspace/ -run '^$' -bench TaskOverhead -benchtime 50x
func BenchmarkTaskOverhead(b *testing.B) {
	b.Cleanup(func() {
		for _, d := range genCleanup {
			_ = os.RemoveAll(d)
		}
		genCleanup, genCache = nil, map[string][2]string{}
	})
	for _, size := range []struct {
		name         string
		files, bytes int
		agent        bool
	}{{"small", 20, 1 << 10, false}, {"10k-files-50MB", 10_000, 5 << 10, false},
		{"small-agent-commits", 20, 1 << 10, true}, {"10k-files-50MB-agent-commits", 10_000, 5 << 10, true}} {
		b.Run(size.name, func(b *testing.B) {
			remote, base := genRepo(b, size.files, size.bytes)
			ctx := context.Background()
			m := newManager(b, remote, func(c *Config) { c.MaxWorktrees = 1 })

			// The plain way, in the same run: a new worktree of a plain bare
			// clone (git's defaults) each time, then a naive commit and diff
			// of a one-file change.
			plainRepo := filepath.Join(b.TempDir(), "plain.git")
			gitT(b, filepath.Dir(plainRepo), "clone", "-q", "--bare", remote, plainRepo)
			var plain, naive []time.Duration
			for i := range 5 {
				dir := filepath.Join(b.TempDir(), "plain")
				t0 := time.Now()
				gitT(b, plainRepo, "worktree", "add", "-q", "-b", "plain"+strconv.Itoa(i), dir, base)
				plain = append(plain, time.Since(t0))
				writeFile(b, dir, "f/00/000.txt", "changed "+strconv.Itoa(i))
				t0 = time.Now()
				gitT(b, dir, "add", "-A")
				gitT(b, dir, "commit", "-q", "-m", "x")
				gitT(b, dir, "diff", "--binary", base, "HEAD")
				naive = append(naive, time.Since(t0))
				gitT(b, plainRepo, "worktree", "remove", "--force", dir)
			}

			// Warm the pool: the first Open of a worker adds its worktree.
			w := openTask(b, m, base, "warm")
			require.NoError(b, w.Release(ctx, false))

			laps := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				task := "T" + strconv.Itoa(i)
				w, err := m.Open(ctx, Spec{Workflow: "bench", Task: task, Branch: "drover/bench/" + task, Base: base})
				if err != nil {
					b.Fatal(err)
				}
				if err := os.WriteFile(filepath.Join(w.Dir(), "f/00/000.txt"), []byte("task "+task+"\n"), 0o644); err != nil {
					b.Fatal(err)
				}
				if size.agent {
					lap := time.Since(t0)
					commitAsAgent(b, m, w.Dir())
					t0 = time.Now().Add(-lap)
				}
				ch, err := w.Commit(ctx, Trailers{Workflow: "bench", Task: task, Attempt: 1, EventID: "E" + task}, "")
				if err != nil || len(ch.Files) != 1 || len(ch.Patch) == 0 {
					b.Fatalf("commit: %v %+v", err, ch.Files)
				}
				if err := w.Release(ctx, false); err != nil {
					b.Fatal(err)
				}
				laps = append(laps, time.Since(t0))
			}
			b.StopTimer()
			b.ReportMetric(pct(laps, 50), "p50-ms")
			b.ReportMetric(pct(laps, 99), "p99-ms")
			b.ReportMetric(pct(plain, 50), "plain-worktree-add-p50-ms")
			b.ReportMetric(pct(naive, 50), "naive-commit-diff-p50-ms")
			b.Logf("%s: workspace overhead p50 %.1f ms, p99 %.1f ms (n=%d); plain worktree add p50 %.1f ms; naive commit+diff p50 %.1f ms",
				size.name, pct(laps, 50), pct(laps, 99), len(laps), pct(plain, 50), pct(naive, 50))
		})
	}
}

// commitAsAgent commits everything in the worktree dir as the agent's git
// does in the sandbox: objects to the private store, the mirror's read.
func commitAsAgent(b *testing.B, m *Manager, dir string) {
	b.Helper()
	for _, args := range [][]string{{"add", "-A"}, {"commit", "-q", "-m", "agent"}} {
		cmd := exec.Command("git", args...)
		cmd.Dir = dir
		cmd.Env = append(testEnv(dir), m.sandboxPaths(dir).Env...)
		if out, err := cmd.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v: %s", args, err, out)
		}
	}
}

// pct returns the p-th percentile of ds in milliseconds.
func pct(ds []time.Duration, p int) float64 {
	if len(ds) == 0 {
		return 0
	}
	s := slices.Clone(ds)
	slices.Sort(s)
	i := min(len(s)-1, (len(s)*p+99)/100-1)
	return float64(s[max(i, 0)]) / float64(time.Millisecond)
}

// genRepo makes a bare repository of files files of about size bytes each
// (pseudo-random text, so it does not compress away) in 100 directories.
func genRepo(b *testing.B, files, size int) (remote, base string) {
	b.Helper()
	key := fmt.Sprint(files, size)
	if r, ok := genCache[key]; ok {
		return r[0], r[1]
	}
	root, err := os.MkdirTemp("", "drover-bench-")
	require.NoError(b, err)
	genCleanup = append(genCleanup, root)
	src := filepath.Join(root, "src")
	r := rand.New(rand.NewPCG(1, 2))
	line := make([]byte, 64)
	for i := range files {
		p := filepath.Join(src, "f", fmt.Sprintf("%02d", i%100), fmt.Sprintf("%03d.txt", i/100))
		require.NoError(b, os.MkdirAll(filepath.Dir(p), 0o755))
		buf := make([]byte, 0, size)
		for len(buf) < size {
			for j := range line[:63] {
				line[j] = 'a' + byte(r.IntN(26))
			}
			line[63] = '\n'
			buf = append(buf, line...)
		}
		require.NoError(b, os.WriteFile(p, buf, 0o644))
	}
	gitT(b, src, "init", "-q", "-b", "main")
	gitT(b, src, "add", "-A")
	gitT(b, src, "commit", "-q", "-m", "generated")
	remote = filepath.Join(root, "remote.git")
	gitT(b, root, "clone", "-q", "--bare", src, remote)
	gitT(b, remote, "repack", "-adq") // as a served repository is: packed
	base = gitT(b, src, "rev-parse", "HEAD")
	genCache[key] = [2]string{remote, base}
	return remote, base
}

// genCache keeps the generated repositories across the runs of a benchmark
// (the testing package calls it once with b.N=1 first); genCleanup removes
// them when the top benchmark ends.
var (
	genCache   = map[string][2]string{}
	genCleanup []string
)
