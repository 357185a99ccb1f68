package worker

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/droverhq/drover/internal/sandbox"
)

// sandboxCheckTimeout bounds the sandbox's check at start.
const sandboxCheckTimeout = 30 * time.Second

// noteSandboxNone is the readiness note of a worker that runs agents
// uncontained because its config says sandbox mode none.
const noteSandboxNone = "sandbox: mode none: agents run uncontained, with the worker's files, environment and processes in reach"

// runsAgents reports whether the worker starts processes that run
// agent-controlled code: workspaces (setup, cleanup, the merge check) or
// an exec runner.
func (c Config) runsAgents() bool { return c.Workspace.Enabled() || c.ExecRunners }

// sandboxVerdict decides whether a worker may start, from whether it runs
// agents, whether its sandbox is off (mode none), and the result of the
// sandbox's check (bubblewrap; nil when it can run). It returns the
// readiness note to record, if any, or why the worker must not start.
func sandboxVerdict(agents, none bool, checkErr error) (note string, err error) {
	switch {
	case !agents:
		return "", nil
	case none:
		return noteSandboxNone, nil
	case errors.Is(checkErr, sandbox.ErrUnavailable):
		return "", fmt.Errorf("sandbox: bubblewrap cannot run here, and this worker runs agents (workspaces or an exec runner): %w. "+
			"Install bubblewrap (the Debian package bubblewrap), allow unprivileged user namespaces "+
			"(in Kubernetes, the pod's securityContext: see docs/security.md, \"Running the sandbox in Kubernetes\"), "+
			"or set sandbox: {mode: none} in the config file (drover serve --sandbox none) to run agents uncontained", checkErr)
	case checkErr != nil:
		return "", fmt.Errorf("sandbox: check: %w", checkErr)
	}
	return "", nil
}

// checkSandbox runs the sandbox's check when the worker runs agents under
// bubblewrap, and records the readiness note of mode none, logging it.
// A nil sandbox (tests) is neither checked nor noted.
func (w *Worker) checkSandbox(ctx context.Context) error {
	sb := w.cfg.Sandbox
	if sb == nil {
		return nil
	}
	agents := w.cfg.runsAgents()
	var checkErr error
	if agents && !sb.None() {
		cctx, cancel := context.WithTimeout(ctx, sandboxCheckTimeout)
		checkErr = sb.Check(cctx)
		cancel()
	}
	note, err := sandboxVerdict(agents, sb.None(), checkErr)
	if err != nil {
		return err
	}
	switch {
	case note != "":
		w.cfg.Log.Warn("the sandbox is off (sandbox mode none): agents run uncontained")
		w.notes.Store(&[]string{note})
	case agents:
		w.cfg.Log.Info("agents run contained", "sandbox", sandbox.ModeBubblewrap)
	}
	return nil
}

// ReadyNotes are the readiness report's checks that pass with a warning,
// each "name: what", such as the sandbox's when it is off. The worker is
// ready all the same.
func (w *Worker) ReadyNotes() []string {
	if p := w.notes.Load(); p != nil {
		return *p
	}
	return nil
}
