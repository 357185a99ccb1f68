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
// workspace's paths; without a workspace a fresh private working
// directory (a temporary one without bubblewrap); a temporary HOME when
// the paths name none and the prompt file is written there (or there is
// no bubblewrap), else a fresh private one; the configured Dir read-only
// and the working directory. Fresh private directories cost no disk
// operations, which on a busy disk cost more than bubblewrap itself.
func (e *Exec) boxPaths(ws *Workspace, promptFile bool) (*boxPaths, error) {
	var p sandbox.Paths
	if ws != nil {
		p = ws.Sandbox
		if p.Work == "" {
			p = sandbox.Paths{Work: ws.Dir}
		}
	}
	plain := e.cfg.Sandbox.None()
	needWork, needHome := p.Work == "" && plain, p.Home == "" && (plain || promptFile)
	b := &boxPaths{spec: sandbox.Spec{NoNetwork: e.cfg.NoNetwork}, cleanup: func() {}}
	if needWork || needHome {
		tmp, err := os.MkdirTemp("", "drover-exec-*")
		if err != nil {
			return nil, err
		}
		b.cleanup = func() { _ = os.RemoveAll(tmp) }
		if needWork {
			p.Work = filepath.Join(tmp, "work")
		}
		if needHome {
			p.Home = filepath.Join(tmp, "home")
		}
		for _, d := range []string{p.Work, p.Home} {
			if d == "" {
				continue
			}
			if err := os.MkdirAll(d, 0o700); err != nil {
				b.cleanup()
				return nil, fmt.Errorf("temporary directory: %w", err)
			}
		}
	}
	if d := e.cfg.Dir; d != "" {
		p.ReadOnly = append(append([]string(nil), p.ReadOnly...), d)
		b.spec.Dir = d
	}
	b.spec.Paths = p
	return b, nil
}
