package cli

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/spf13/pflag"

	"github.com/droverhq/drover/internal/config"
	"github.com/droverhq/drover/internal/redact"
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
// process: the data directory (the embedded server's store), the config
// file, the files that hold credentials, and with workspaces their
// directory, copy_from and a local repository.
func serveSandbox(fs *pflag.FlagSet, g *globals, f *serveFlags, file config.Sandbox) (*sandbox.Sandbox, error) {
	override(fs, "sandbox", &f.sandboxMode, file.Mode)
	switch f.sandboxMode {
	case "":
		f.sandboxMode = sandbox.ModeBubblewrap
	case sandbox.ModeBubblewrap, sandbox.ModeNone:
	default:
		return nil, fmt.Errorf("--sandbox %.40q: want bubblewrap or none", f.sandboxMode)
	}
	cfg := sandbox.Config{Mode: f.sandboxMode, ReadOnly: file.ReadOnly, TmpBytes: file.TmpBytes}
	hide := []string{f.data, f.config, f.server.passwordFile, f.server.tokenFile, f.server.config,
		g.auth.NkeyFile, g.auth.CredsFile, g.auth.TLSKey}
	if ws := workspaceConfig(*f); ws.Enabled() {
		// The mirror and every worktree (a contained process is given its
		// own back), and the operator's checkout copy_ignored reads (.env).
		hide = append(hide, ws.Dir, ws.CopyFrom)
		for _, repo := range []string{ws.Repo, ws.PushRemote} {
			if _, err := os.Stat(repo); err == nil { // a local repository, not a URL
				hide = append(hide, repo)
			}
		}
	}
	for _, p := range hide {
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

// reportSandbox prints, for drover config check, how a worker with the
// file would contain its agents, checking bubblewrap here. Nothing when the
// file runs no agents. It never fails the check: the file may be meant for
// another machine.
func reportSandbox(ctx context.Context, w io.Writer, file *config.File) {
	if !file.Workspace.Enabled() && !file.ExecRoles() {
		return
	}
	if file.Sandbox.None() {
		fmt.Fprintln(w, "\nsandbox: none: agents run uncontained (the worker warns at start and in /readyz)")
		return
	}
	sb, err := sandbox.New(file.Sandbox.Config)
	if err == nil {
		err = sb.Check(ctx) // bounded by its own timeout
	}
	if err != nil {
		fmt.Fprintf(w, "\nsandbox: bubblewrap cannot run here, so a worker here would refuse to start: %s\n", redact.OneLine(err.Error()))
		return
	}
	fmt.Fprintln(w, "\nsandbox: bubblewrap runs here")
}
