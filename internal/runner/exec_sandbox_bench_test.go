//go:build linux

package runner

import (
	"context"
	"os"
	"path/filepath"
	"sort"
	"testing"
	"time"

	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/internal/sandbox/sandboxtest"
	"github.com/droverhq/drover/subjects"
)

// BenchmarkExecRoleStart measures a whole exec role (a planner whose
// program prints one line) run plainly, in the sandbox without a
// workspace, and in the sandbox with a workspace's paths (a worktree, a
// read-only mirror, a HOME), in the same run, reporting the p50 and p99 of
// each in ms:
//
//	go test -run '^$' -bench ExecRoleStart -benchtime 300x ./internal/runner/
func BenchmarkExecRoleStart(b *testing.B) {
	sandboxtest.Require(b)
	root := b.TempDir()
	ws := &Workspace{Dir: filepath.Join(root, "wt"), Sandbox: sandbox.Paths{
		Work: filepath.Join(root, "wt"), ReadOnly: []string{filepath.Join(root, "mirror.git")}, Home: filepath.Join(root, "home")}}
	for _, d := range []string{ws.Dir, ws.Sandbox.ReadOnly[0], ws.Sandbox.Home} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			b.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		box  *sandbox.Sandbox
		ws   *Workspace
	}{{"Plain", nil, nil}, {"Sandbox", newSandbox(b, sandbox.Config{}), nil}, {"SandboxWorkspace", newSandbox(b, sandbox.Config{}), ws}} {
		b.Run(tc.name, func(b *testing.B) {
			cfg := ExecConfig{Argv: []string{"/bin/echo", "a plan"}, Sandbox: tc.box}
			if tc.box == nil {
				cfg.Dir = b.TempDir()
			}
			e, err := NewExec(subjects.RolePlanner, cfg, nil)
			if err != nil {
				b.Fatal(err)
			}
			req := Request{Role: subjects.RolePlanner, Task: subjects.TaskRequest{ID: "T1", Workflow: "wf", Scope: "s", Verification: "v"}, Attempt: 1, Workspace: tc.ws}
			took := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if _, err := e.Run(context.Background(), req); err != nil {
					b.Fatal(err)
				}
				took = append(took, time.Since(start))
			}
			sort.Slice(took, func(i, j int) bool { return took[i] < took[j] })
			at := func(q float64) float64 { return float64(took[int(q*float64(len(took)-1))].Microseconds()) / 1000 }
			b.ReportMetric(at(0.50), "p50-ms")
			b.ReportMetric(at(0.99), "p99-ms")
		})
	}
}
