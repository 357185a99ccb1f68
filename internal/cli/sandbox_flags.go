package cli

import (
	"fmt"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/droverhq/drover/internal/config"
	"github.com/droverhq/drover/internal/sandbox"
)

// addSandboxFlags registers serve's --sandbox (env DROVER_SANDBOX), the
// mode of the file's sandbox: block; its read_only list is in the file
// only.
func addSandboxFlags(fl *pflag.FlagSet, mode *string) {
	fl.StringVar(mode, "sandbox", sandbox.ModeBubblewrap, `how processes that run agent code are contained: "bubblewrap", or "none" to run them uncontained (a warning, noted in /readyz)`)
}

// serveSandbox builds the worker's sandbox from --sandbox and the file's
// sandbox: block. It hides the worker's own files from every contained
// process: the data directory (the embedded server's store, the default
// workspaces), the config file, and the files that hold credentials.
func serveSandbox(fs *pflag.FlagSet, g *globals, f *serveFlags, file config.Sandbox) (*sandbox.Sandbox, error) {
	override(fs, "sandbox", &f.sandboxMode, file.Mode)
	switch f.sandboxMode {
	case "":
		f.sandboxMode = sandbox.ModeBubblewrap
	case sandbox.ModeBubblewrap, sandbox.ModeNone:
	default:
		return nil, fmt.Errorf("--sandbox %.40q: want bubblewrap or none", f.sandboxMode)
	}
	cfg := sandbox.Config{Mode: f.sandboxMode, ReadOnly: file.ReadOnly}
	for _, p := range []string{f.data, f.config, f.server.passwordFile, f.server.tokenFile, f.server.config,
		g.auth.NkeyFile, g.auth.CredsFile, g.auth.TLSKey} {
		if p == "" {
			continue
		}
		abs, err := filepath.Abs(p)
		if err != nil {
			return nil, fmt.Errorf("sandbox: %s: %w", p, err)
		}
		cfg.Hide = append(cfg.Hide, abs)
	}
	sb, err := sandbox.New(cfg)
	if err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return sb, nil
}
