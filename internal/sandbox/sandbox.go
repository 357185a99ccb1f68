package sandbox

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"
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

// checkTimeout bounds Check's trial run.
const checkTimeout = 10 * time.Second

// maxReason is how much of bwrap's stderr Check keeps.
const maxReason = 1 << 10

// Config configures the sandbox. The zero value is bubblewrap with the
// system's directories only.
type Config struct {
	// Mode is ModeBubblewrap (default, also when empty) or ModeNone.
	Mode string `yaml:"mode"`
	// ReadOnly are further absolute paths made visible read-only (a
	// toolchain, a module cache); one missing on this machine is left out.
	// Empty: none. "/" is refused: it would show the whole machine.
	ReadOnly []string `yaml:"read_only"`
	// Hide are absolute paths never visible, even below a visible
	// directory: the worker's data directory, its config file. The worker
	// sets them. A directory is shown empty, a file as /dev/null.
	Hide []string `yaml:"-"`
	// TmpBytes bounds the private /tmp, which is memory (a tmpfs), so an
	// agent cannot fill the worker's RAM through it. Zero: DefaultTmpBytes.
	TmpBytes int64 `yaml:"tmp_bytes"`
}

// DefaultTmpBytes is the size of a contained process's private /tmp.
const DefaultTmpBytes = 1 << 30

// Spec is one process to contain.
type Spec struct {
	// Paths are what it sees besides the system's directories.
	Paths Paths
	// Dir is its working directory when not Paths.Work; it must be one of
	// the paths it sees (a configured runner dir, added to ReadOnly).
	Dir string
	// Env is its whole environment but HOME, TMPDIR and the XDG
	// directories, which Command sets: the caller builds it (PATH,
	// DROVER_*, the variables the config names), never inherits it.
	Env []string
	// NoNetwork cuts the network (its own empty network namespace, only
	// loopback); bubblewrap only.
	NoNetwork bool
}

// env is Env then Paths.Env: a later entry of a name wins in buildEnv.
func (s Spec) env() []string {
	return append(append([]string(nil), s.Env...), s.Paths.Env...)
}

func (s Spec) dir() string {
	switch {
	case s.Dir != "":
		return s.Dir
	case s.Paths.Work != "":
		return s.Paths.Work
	}
	return freshWork
}

// Sandbox starts contained processes. It is safe for concurrent use.
type Sandbox struct {
	cfg   Config
	bwrap string // bwrap's path; "" when not found
}

// New validates cfg and returns a Sandbox; Check says whether it can run.
// Errors name the field: sandbox.mode, sandbox.read_only[i],
// sandbox.hide[i].
func New(cfg Config) (*Sandbox, error) {
	switch cfg.Mode {
	case "":
		cfg.Mode = ModeBubblewrap
	case ModeBubblewrap, ModeNone:
	default:
		return nil, fmt.Errorf("sandbox.mode: %q is not a mode: want %s or %s", cfg.Mode, ModeBubblewrap, ModeNone)
	}
	var err error
	if cfg.TmpBytes < 0 {
		return nil, fmt.Errorf("sandbox.tmp_bytes: %d is negative", cfg.TmpBytes)
	}
	if cfg.ReadOnly, err = absPaths("sandbox.read_only", cfg.ReadOnly); err != nil {
		return nil, err
	}
	for i, p := range cfg.ReadOnly {
		if p == "/" {
			return nil, fmt.Errorf("sandbox.read_only[%d]: %q would show the whole machine", i, p)
		}
	}
	if cfg.Hide, err = absPaths("sandbox.hide", cfg.Hide); err != nil {
		return nil, err
	}
	s := &Sandbox{cfg: cfg}
	if cfg.Mode == ModeBubblewrap {
		if p, err := exec.LookPath("bwrap"); err == nil {
			s.bwrap = p
		} else if _, err := os.Stat("/usr/bin/bwrap"); err == nil {
			s.bwrap = "/usr/bin/bwrap"
		}
	}
	return s, nil
}

// absPaths returns paths cleaned, or an error naming field[i] for one that
// is not absolute.
func absPaths(field string, paths []string) ([]string, error) {
	out := make([]string, len(paths))
	for i, p := range paths {
		if !filepath.IsAbs(p) || strings.IndexByte(p, 0) >= 0 {
			return nil, fmt.Errorf("%s[%d]: %q is not an absolute path", field, i, p)
		}
		out[i] = filepath.Clean(p)
	}
	return out, nil
}

// Mode is the sandbox's mode: ModeBubblewrap or ModeNone.
func (s *Sandbox) Mode() string { return s.cfg.Mode }

// None reports whether processes run uncontained (ModeNone).
func (s *Sandbox) None() bool { return s.cfg.Mode == ModeNone }

// Check starts one contained process (true) with the flags every process
// gets, and returns ErrUnavailable, wrapped with the reason (bwrap's
// stderr, bounded), when it cannot. ModeNone always can.
func (s *Sandbox) Check(ctx context.Context) error {
	if s.None() {
		return nil
	}
	if err := s.available(); err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, checkTimeout)
	defer cancel()
	work, err := os.MkdirTemp("", "drover-sandbox-check-*")
	if err != nil {
		return fmt.Errorf("sandbox: check: %w", err)
	}
	defer func() { _ = os.RemoveAll(work) }() // best effort: a temporary file
	cmd, err := s.Command(ctx, Spec{Paths: Paths{Work: work}, Env: []string{"PATH=/usr/bin:/bin"}}, []string{"true"})
	if err != nil {
		return err
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		reason := strings.TrimSpace(stderr.String())
		if len(reason) > maxReason {
			reason = reason[:maxReason] + "..."
		}
		if reason == "" {
			reason = err.Error()
		}
		return fmt.Errorf("%w: bubblewrap: %s", ErrUnavailable, reason)
	}
	return nil
}

// available says why bubblewrap cannot run here, if it cannot.
func (s *Sandbox) available() error {
	switch {
	case runtime.GOOS != "linux":
		return fmt.Errorf("%w: bubblewrap runs on Linux only, not %s (sandbox.mode: none runs agents uncontained)", ErrUnavailable, runtime.GOOS)
	case s.bwrap == "":
		return fmt.Errorf("%w: bwrap not found in PATH (install the bubblewrap package)", ErrUnavailable)
	}
	return nil
}

// Command returns the command that runs argv contained by spec, in
// spec.Dir (default spec.Paths.Work), with its environment set: Spec.Env,
// then Paths.Env (which wins), HOME, the XDG directories under it and TMPDIR, nothing inherited. A
// missing Home is made. The caller sets its standard streams and process
// attributes and starts it. argv[0] is looked up in the PATH of Spec.Env
// inside the sandbox unless it holds a slash; with ModeNone it should be
// absolute. bwrap sets the working directory inside, so the command's own
// Dir is left empty.
func (s *Sandbox) Command(ctx context.Context, spec Spec, argv []string) (*exec.Cmd, error) {
	if err := checkSpec(spec, argv); err != nil {
		return nil, err
	}
	if h := spec.Paths.Home; h != "" {
		if err := os.MkdirAll(h, 0o700); err != nil {
			return nil, fmt.Errorf("sandbox: home: %w", err)
		}
	}
	if s.None() {
		if spec.Paths.Work == "" || spec.Paths.Home == "" {
			return nil, errors.New("sandbox: spec: Paths.Work and Paths.Home are required with sandbox.mode none")
		}
		if spec.NoNetwork {
			return nil, errors.New("sandbox: spec: cutting the network needs the bubblewrap sandbox, and sandbox.mode is none")
		}
		cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
		cmd.Dir = spec.dir()
		cmd.Env = buildEnv(spec.env(), spec.Paths.Home, os.TempDir())
		return cmd, nil
	}
	if err := s.available(); err != nil {
		return nil, err
	}
	home := spec.Paths.Home
	if home == "" {
		home = freshHome
	}
	args := append(s.args(spec), "--")
	cmd := exec.CommandContext(ctx, s.bwrap, append(args, argv...)...)
	cmd.Env = buildEnv(spec.env(), home, privateTmp)
	return cmd, nil
}

// checkSpec reports the first path of spec that is not absolute, or an
// empty argv.
func checkSpec(spec Spec, argv []string) error {
	if len(argv) == 0 || argv[0] == "" {
		return errors.New("sandbox: argv: empty")
	}
	for i, a := range argv {
		if strings.IndexByte(a, 0) >= 0 {
			return fmt.Errorf("sandbox: argv[%d]: contains a NUL byte", i)
		}
	}
	p := spec.Paths
	one := func(field, v string) error {
		switch {
		case v == "":
		case !filepath.IsAbs(v) || filepath.Clean(v) != v || strings.IndexByte(v, 0) >= 0:
			return fmt.Errorf("sandbox: spec: %s: %q is not a clean absolute path", field, v)
		case v == "/":
			return fmt.Errorf("sandbox: spec: %s: \"/\" would show the whole machine", field)
		}
		return nil
	}
	errs := []error{one("Paths.Work", p.Work), one("Paths.Home", p.Home), one("Dir", spec.Dir)}
	for i, v := range p.Writable {
		errs = append(errs, one(fmt.Sprintf("Paths.Writable[%d]", i), v))
	}
	for i, v := range p.ReadOnly {
		errs = append(errs, one(fmt.Sprintf("Paths.ReadOnly[%d]", i), v))
	}
	for i, v := range p.Masked {
		errs = append(errs, one(fmt.Sprintf("Paths.Masked[%d]", i), v))
	}
	return errors.Join(errs...)
}
