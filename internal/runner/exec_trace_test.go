//go:build unix

package runner

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// TestExecTraceParentEnv: the child gets the request's traceparent as
// TRACEPARENT, and no such variable when there is none.
func TestExecTraceParentEnv(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sh := filepath.Join(dir, "trace.sh")
	require.NoError(t, os.WriteFile(sh, []byte(`#!/bin/sh
printf '%s' "${TRACEPARENT-unset}" > "$OUT"
echo '{"plan": "traced"}'
`), 0o755))
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, c := range []struct{ traceparent, want string }{{tp, tp}, {"", "unset"}} {
		out := filepath.Join(t.TempDir(), "tp")
		e := newExec(t, subjects.RolePlanner, ExecConfig{Argv: []string{sh}, Env: map[string]string{"OUT": out}})
		req := simReq(t, subjects.RolePlanner, "")
		req.TraceParent = c.traceparent
		_, err := e.Run(context.Background(), req)
		require.NoError(t, err)
		got, err := os.ReadFile(out)
		require.NoError(t, err)
		require.Equal(t, c.want, string(got))
	}
}
