package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

// TestRun runs a small bench on an embedded server and checks that every
// task completes, that a cold one-round task costs at most ten stored
// writes (the pipeline's design), that the figures are sane, and that the
// run leaves no goroutine and no store behind. It asserts nothing on wall
// time.
func TestRun(t *testing.T) {
	leaks := goleak.IgnoreCurrent()
	dir := filepath.Join(t.TempDir(), "store")
	const n = 200
	rep, err := Run(context.Background(), Config{
		Tasks: n, Concurrency: 8, Sync: time.Second, DataDir: dir,
		Timeout: 2 * time.Minute, Log: slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	require.NoError(t, err)

	require.Equal(t, n, rep.Drover.Completed, "every task completes")
	require.Zero(t, rep.Drover.Failed)
	require.LessOrEqual(t, rep.Writes.PerTaskExcl, MaxWritesPerTask, "stored writes of a cold one-round task: %+v", rep.Writes.Streams)
	require.EqualValues(t, n, rep.Writes.Request, "one stored request per task")
	require.InDelta(t, rep.Writes.PerTaskExcl+1, rep.Writes.PerTask, 1e-9)
	require.Nil(t, rep.Latency, "no latency phase unless asked for")
	require.Nil(t, rep.Cached, "no cached phase unless asked for")
	require.Nil(t, rep.Agents, "no agents phase unless asked for")

	ph := rep.Drover
	require.Positive(t, ph.TasksPerSec)
	require.Positive(t, ph.P50)
	require.GreaterOrEqual(t, ph.P99, ph.P50)
	require.Positive(t, ph.Elapsed)
	require.Positive(t, ph.AllocsPerTask)
	require.Greater(t, ph.AllocBytesPerTask, ph.AllocsPerTask, "an allocation is at least a byte")

	var text bytes.Buffer
	require.NoError(t, rep.WriteText(&text))
	for _, label := range []string{"tasks/s", "allocs/task", "GCs", "stored writes per task"} {
		require.Contains(t, text.String(), label)
	}
	require.Contains(t, text.String(), "DROVER_BENCH_AUDIT")
	var js bytes.Buffer
	require.NoError(t, rep.WriteJSON(&js))
	var back map[string]any
	require.NoError(t, json.Unmarshal(js.Bytes(), &back))
	for _, key := range []string{"drover", "writes", "tasks", "sync"} {
		require.Contains(t, back, key)
	}

	_, err = os.Stat(dir)
	require.True(t, os.IsNotExist(err), "the store is removed after the run")
	goleak.VerifyNone(t, leaks)
}

func TestRunRefusesAStoreInUse(t *testing.T) {
	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "keep"), []byte("x"), 0o600))
	_, err := Run(context.Background(), Config{Tasks: 1, DataDir: dir})
	require.ErrorContains(t, err, "not empty")
	_, err = os.Stat(filepath.Join(dir, "keep"))
	require.NoError(t, err, "nothing removed")
}

func TestSyncLabel(t *testing.T) {
	require.True(t, strings.HasPrefix(SyncLabel(0), "always"))
}

func TestPercentile(t *testing.T) {
	var d []time.Duration
	for i := 1; i <= 100; i++ {
		d = append(d, time.Duration(i))
	}
	require.Equal(t, time.Duration(50), Percentile(d, 50))
	require.Equal(t, time.Duration(99), Percentile(d, 99))
	require.Equal(t, time.Duration(7), Percentile([]time.Duration{7}, 99))
	require.Zero(t, Percentile(nil, 50))
}

func TestNewPhase(t *testing.T) {
	t0 := time.Unix(0, 0)
	submit := []time.Time{t0, t0.Add(time.Second)}
	end := []time.Time{t0.Add(time.Second), t0.Add(2 * time.Second)}
	ph := NewPhase(submit, end)
	require.Equal(t, 2, ph.Completed)
	require.Equal(t, 2*time.Second, ph.Elapsed)
	require.InDelta(t, 1.0, ph.TasksPerSec, 1e-9)
	require.Equal(t, time.Second, ph.P50)
}
