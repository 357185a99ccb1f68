package mergequeue_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/mergequeue"
	"github.com/droverhq/drover/internal/workspace"
)

// timingSink records when each entry reached the target.
type timingSink struct {
	mu   sync.Mutex
	lat  []time.Duration // enqueue to merged
	done chan struct{}
	want int
	// unwanted are tasks Wanted refuses (nil: none).
	unwanted map[string]bool
	// later counts, per task, the first calls of Wanted answered
	// WantLater (the task not parked yet); asked counts every call.
	later map[string]int
	asked map[string]int
}

func (s *timingSink) Merged(_ context.Context, e mergequeue.Entry, _, _ string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.lat = append(s.lat, time.Since(e.Enqueued))
	if len(s.lat) == s.want {
		close(s.done)
	}
	return nil
}

func (s *timingSink) Wanted(_ context.Context, e mergequeue.Entry) (mergequeue.Want, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.asked == nil {
		s.asked = map[string]int{}
	}
	s.asked[e.Task]++
	if s.asked[e.Task] <= s.later[e.Task] {
		return mergequeue.WantLater, nil
	}
	if s.unwanted[e.Task] {
		return mergequeue.WantDrop, nil
	}
	return mergequeue.WantMerge, nil
}

func (s *timingSink) SendBack(context.Context, mergequeue.Entry, string, string) error { return nil }

// BenchmarkMergeQueue measures the merge queue: branches merged per minute
// with a no-op check, and the time from approval (enqueue) to the target
// holding the change at p50 and p99, for a burst of 48 approved branches
// with 1 and with 2 mergers configured (batch 8).
func BenchmarkMergeQueue(b *testing.B) {
	const branches = 48
	for _, mergers := range []int{1, 2} {
		b.Run(fmt.Sprintf("mergers=%d", mergers), func(b *testing.B) {
			var perMin, p50, p99 float64
			for range b.N {
				b.StopTimer()
				bd := setup(b, []string{"true"}, 8)
				base := git(b, bd.clone, "rev-parse", "origin/main")
				heads := make([]string, branches)
				for i := range branches {
					task := fmt.Sprintf("b%03d", i)
					heads[i] = bd.branch(task, base, map[string]string{task + ".txt": task + "\n"})
				}
				sink := &timingSink{done: make(chan struct{}), want: branches}
				ctx, cancel := context.WithCancel(context.Background())
				var wg sync.WaitGroup
				for k := range mergers {
					ws, err := workspace.New(workspace.Deps{}, workspace.Config{Repo: bd.remote, Dir: filepath.Join(bd.root, fmt.Sprintf("m%d", k))})
					require.NoError(b, err)
					require.NoError(b, ws.Start(ctx))
					m, err := mergequeue.New(ctx, mergequeue.Deps{JS: bd.js, Names: bd.names, Repo: mergequeue.GitRepo{M: ws}, Sink: sink,
						Holder: fmt.Sprintf("m%d", k)}, mergequeue.Config{Target: "main", Batch: 8, LeaseTTL: 2 * time.Second,
						Check: workspace.Command{Argv: []string{"true"}}})
					require.NoError(b, err)
					wg.Add(1)
					go func() { defer wg.Done(); _ = m.Run(ctx); _ = ws.Close() }()
				}
				b.StartTimer()
				start := time.Now()
				for i := range branches {
					bd.enqueue(fmt.Sprintf("b%03d", i), heads[i], 1)
				}
				select {
				case <-sink.done:
				case <-time.After(5 * time.Minute):
					b.Fatal("the queue did not drain in 5 minutes")
				}
				elapsed := time.Since(start)
				b.StopTimer()
				cancel()
				wg.Wait()
				slices.Sort(sink.lat)
				perMin = branches / elapsed.Minutes()
				p50 = sink.lat[len(sink.lat)/2].Seconds()
				p99 = sink.lat[len(sink.lat)*99/100].Seconds()
				b.Logf("pushes to main: %d", bd.mainPushes())
			}
			b.ReportMetric(perMin, "branches/min")
			b.ReportMetric(p50, "p50-s")
			b.ReportMetric(p99, "p99-s")
		})
	}
}
