package runner

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/droverhq/drover/internal/sandbox"
)

// boxPaths is what a contained child sees for one run, and the temporary
// directories made for it.
type boxPaths struct {
	spec    sandbox.Spec
	cleanup func()
}

// boxPaths builds the child's sandbox spec (without its environment): the
// workspace's paths, or without a workspace a temporary working directory;
// a temporary HOME when the paths name none (the prompt file is written
// there); the configured Dir read-only and the working directory.
func (e *Exec) boxPaths(ws *Workspace) (*boxPaths, error) {
	var p sandbox.Paths
	var tmp string
	if ws != nil {
		p = ws.Sandbox
		if p.Work == "" {
			p = sandbox.Paths{Work: ws.Dir}
		}
	}
	if p.Work == "" || p.Home == "" {
		var err error
		if tmp, err = os.MkdirTemp("", "drover-exec-*"); err != nil {
			return nil, err
		}
		if p.Work == "" {
			p.Work = filepath.Join(tmp, "work")
		}
		if p.Home == "" {
			p.Home = filepath.Join(tmp, "home")
		}
		for _, d := range []string{p.Work, p.Home} {
			if err := os.MkdirAll(d, 0o700); err != nil {
				_ = os.RemoveAll(tmp)
				return nil, fmt.Errorf("temporary directory: %w", err)
			}
		}
	}
	b := &boxPaths{spec: sandbox.Spec{NoNetwork: e.cfg.NoNetwork}, cleanup: func() {}}
	if tmp != "" {
		b.cleanup = func() { _ = os.RemoveAll(tmp) }
	}
	if d := e.cfg.Dir; d != "" {
		p.ReadOnly = append(append([]string(nil), p.ReadOnly...), d)
		b.spec.Dir = d
	}
	b.spec.Paths = p
	return b, nil
}
