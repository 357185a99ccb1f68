package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// maxStderr bounds the stderr of a git command kept for an error message.
const maxStderr = 2048

// errOutputLimit cancels a git command whose stdout passed its bound.
var errOutputLimit = errors.New("output over its bound")

// gitRunner starts the git binary with an argv, a clean environment, the
// repository named explicitly (never discovered from a directory an agent
// can write) and configuration overrides that no file can undo.
type gitRunner struct {
	bin     string
	env     []string
	timeout time.Duration
	mirror  string // the bare mirror: the common dir of every worktree
	cwd     string // the working directory of commands outside a worktree
}

// passEnv are the variables of the worker's environment git may see: what
// it needs to find programs and reach a remote, nothing of the user's git
// configuration.
var passEnv = []string{
	"PATH", "TMPDIR", "SSH_AUTH_SOCK", "GIT_SSH_COMMAND",
	"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
}

// overrides are set on every git command as command-line configuration
// (GIT_CONFIG_COUNT, the same precedence as -c, above every file): the keys
// that start programs or reach beyond the repository. They guard against a
// configuration file Drover did not write; with the repository named
// explicitly git reads none (the mirror's config and Drover's private
// global one only).
var overrides = [][2]string{
	{"core.fsmonitor", "false"},
	{"core.hooksPath", os.DevNull}, // no hook can exist below a device
	{"core.pager", "cat"},
	{"core.editor", "false"},
	{"sequence.editor", "false"},
	{"core.askPass", ""},
	{"core.sshCommand", "ssh"}, // GIT_SSH_COMMAND from the operator still wins
	{"core.alternateRefsCommand", "true"},
	{"protocol.ext.allow", "never"},
	{"submodule.recurse", "false"},
	{"fetch.recurseSubmodules", "false"},
	{"push.recurseSubmodules", "no"},
	{"status.submoduleSummary", "false"},
	{"commit.gpgSign", "false"},
	{"merge.verifySignatures", "false"},
	{"push.gpgSign", "false"},
	{"gc.auto", "0"},
	{"maintenance.auto", "false"},
	// A worktree's private object store is an alternate an agent writes:
	// git would read a commit-graph or multi-pack-index found there,
	// which can lie about parents. The mirror writes neither.
	{"core.commitGraph", "false"},
	{"core.multiPackIndex", "false"},
}

// configEnv is overrides as GIT_CONFIG_COUNT variables.
func configEnv() []string {
	env := []string{"GIT_CONFIG_COUNT=" + strconv.Itoa(len(overrides))}
	for i, kv := range overrides {
		env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, kv[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, kv[1]))
	}
	return env
}

// newGitRunner returns a runner for the mirror; home is git's private HOME
// and cwd the working directory of commands outside a worktree (created by
// Start).
func newGitRunner(home, mirror, cwd string, timeout time.Duration) (*gitRunner, error) {
	bin, err := exec.LookPath("git")
	if err != nil {
		return nil, fmt.Errorf("workspace: git: %w", err)
	}
	env := []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + home,
		"GIT_CONFIG_NOSYSTEM=1",
		"GIT_TERMINAL_PROMPT=0",
		"GIT_ASKPASS=",
		"SSH_ASKPASS=",
		"GIT_SSH_VARIANT=ssh",
		"LC_ALL=C",
		"GIT_AUTHOR_NAME=Drover",
		"GIT_AUTHOR_EMAIL=drover@localhost",
		"GIT_COMMITTER_NAME=Drover",
		"GIT_COMMITTER_EMAIL=drover@localhost",
		"GIT_EDITOR=false",
		"GIT_SEQUENCE_EDITOR=false",
		"GIT_PAGER=cat",
		"GIT_NO_REPLACE_OBJECTS=1",
		// A command outside a worktree never looks above cwd for a
		// repository.
		"GIT_CEILING_DIRECTORIES=" + filepath.Dir(cwd),
	}
	env = append(env, configEnv()...)
	for _, k := range passEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return &gitRunner{bin: bin, env: env, timeout: timeout, mirror: mirror, cwd: cwd}, nil
}

// gitCall is one git command.
type gitCall struct {
	// dir is a worktree of the mirror: the command runs in it with its
	// git dir (the mirror's worktrees/<base name of dir>), the common dir
	// (the mirror) and the work tree set explicitly, so neither the
	// worktree's .git file nor the admin dir's commondir is read. Empty:
	// a command outside any worktree, naming its repository itself.
	dir   string
	args  []string // after "git"
	stdin []byte
	env   []string // added to the clean environment
	limit int      // stdout bound in bytes (0 = 64 MiB)
}

// run runs c and returns its stdout. A non-zero exit is an error holding the
// command and the tail of stderr; a stdout over the limit is errOutputLimit.
func (g *gitRunner) run(ctx context.Context, c gitCall) ([]byte, error) {
	ctx, cancelT := context.WithTimeoutCause(ctx, g.timeout, fmt.Errorf("git %s: timed out after %v", first(c.args), g.timeout))
	defer cancelT()
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	limit := c.limit
	if limit == 0 {
		limit = 64 << 20
	}
	cmd := exec.CommandContext(ctx, g.bin, c.args...)
	cmd.Env = append(append([]string(nil), g.env...), c.env...)
	if c.dir != "" {
		cmd.Dir = c.dir
		// The agent's private object store is read as an alternate;
		// Drover's own new objects go to the mirror's.
		cmd.Env = append(cmd.Env, "GIT_DIR="+g.adminDir(c.dir), "GIT_COMMON_DIR="+g.mirror, "GIT_WORK_TREE="+c.dir,
			"GIT_ALTERNATE_OBJECT_DIRECTORIES="+g.objectsDir(c.dir))
	} else if _, err := os.Stat(g.cwd); err == nil {
		cmd.Dir = g.cwd
	}
	if c.stdin != nil {
		cmd.Stdin = bytes.NewReader(c.stdin)
	}
	stdout := &capWriter{max: limit, onOver: func() { cancel(errOutputLimit) }}
	stderr := &capWriter{max: maxStderr, tail: true}
	cmd.Stdout, cmd.Stderr = stdout, stderr
	cmd.WaitDelay = 5 * time.Second
	err := cmd.Run()
	if stdout.over {
		return stdout.buf.Bytes(), errOutputLimit
	}
	if err != nil {
		if cause := context.Cause(ctx); cause != nil && ctx.Err() != nil {
			return stdout.buf.Bytes(), cause
		}
		msg := strings.TrimSpace(stderr.buf.String())
		return stdout.buf.Bytes(), &gitError{args: c.args, err: err, stderr: msg}
	}
	return stdout.buf.Bytes(), nil
}

// adminDir is the git dir of the worktree dir: Drover names every
// worktree's admin directory after the worktree's base name (addWorktree).
func (g *gitRunner) adminDir(dir string) string {
	return filepath.Join(g.mirror, "worktrees", filepath.Base(dir))
}

// objectsDir is the private object store of the worktree dir, in its admin
// directory: the agent's git writes its objects there, never to the
// mirror's store, which it sees read-only.
func (g *gitRunner) objectsDir(dir string) string {
	return filepath.Join(g.adminDir(dir), "objects")
}

// out runs c and returns its stdout trimmed of white space.
func (g *gitRunner) out(ctx context.Context, dir string, args ...string) (string, error) {
	b, err := g.run(ctx, gitCall{dir: dir, args: args})
	return strings.TrimSpace(string(b)), err
}

// gitError is a git command that exited non-zero.
type gitError struct {
	args   []string
	err    error
	stderr string
}

func (e *gitError) Error() string {
	return fmt.Sprintf("git %s: %v: %s", first(e.args), e.err, e.stderr)
}

func (e *gitError) Unwrap() error { return e.err }

// first names a git command by its subcommand, skipping -C/-c options.
func first(args []string) string {
	for i := 0; i < len(args); i++ {
		switch a := args[i]; {
		case a == "-C" || a == "-c" || a == "--git-dir":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return "?"
}

// capWriter keeps at most max bytes: the first ones, or the last with tail.
type capWriter struct {
	buf    bytes.Buffer
	max    int
	tail   bool
	over   bool
	onOver func()
}

func (w *capWriter) Write(p []byte) (int, error) {
	if w.tail {
		w.buf.Write(p)
		if over := w.buf.Len() - w.max; over > 0 {
			b := append([]byte(nil), w.buf.Bytes()[over:]...)
			w.buf.Reset()
			w.buf.Write(b)
		}
		return len(p), nil
	}
	if room := w.max - w.buf.Len(); len(p) > room {
		w.buf.Write(p[:max(room, 0)])
		if !w.over && w.onOver != nil {
			w.onOver()
		}
		w.over = true
		return 0, errOutputLimit
	}
	return w.buf.Write(p)
}
