package runner

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestSimCallLog(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "calls.jsonl")
	// Two Sims share the file, as two worker processes would.
	sims := []*Sim{NewSim(SimOptions{CallLog: path}), NewSim(SimOptions{CallLog: path})}
	const perSim = 50
	var wg sync.WaitGroup
	failing := simReq(t, subjects.RoleImplementer, `{"fail": {"role": "implementer", "times": 10}}`)
	for _, s := range sims {
		for i := 0; i < perSim; i++ {
			wg.Add(1)
			go func(try int) {
				defer wg.Done()
				req := failing
				req.Try = try
				_, _ = s.Run(context.Background(), req) // failures are logged too
			}(i + 1)
		}
	}
	wg.Wait()

	f, err := os.Open(path)
	require.NoError(t, err)
	defer func() { _ = f.Close() }() // read only
	lines := 0
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		lines++
		var l map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(sc.Bytes(), &l), "line %d: %s", lines, sc.Text())
		for _, k := range []string{"role", "workflow", "task", "attempt", "try", "time"} {
			require.Contains(t, l, k)
		}
		var typed CallLogLine
		require.NoError(t, json.Unmarshal(sc.Bytes(), &typed))
		require.Equal(t, subjects.RoleImplementer, typed.Role)
		require.Equal(t, "wf-1", typed.Workflow)
		require.Equal(t, "T1.1", typed.Task)
		require.Equal(t, 1, typed.Attempt)
		require.False(t, typed.Time.IsZero())
	}
	require.NoError(t, sc.Err())
	require.Equal(t, 2*perSim, lines)
}

func TestSimCallLogUnwritable(t *testing.T) {
	t.Parallel()
	s := NewSim(SimOptions{CallLog: filepath.Join(t.TempDir(), "missing-dir", "calls.jsonl")})
	_, err := s.Run(context.Background(), simReq(t, subjects.RolePlanner, ""))
	require.Error(t, err)
}
