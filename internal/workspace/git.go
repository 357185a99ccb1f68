package workspace

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"
)

// maxStderr bounds the stderr of a git command kept for an error message.
const maxStderr = 2048

// errOutputLimit cancels a git command whose stdout passed its bound.
var errOutputLimit = errors.New("output over its bound")

// gitRunner starts the git binary with an argv and a clean environment.
type gitRunner struct {
	bin     string
	env     []string
	timeout time.Duration
}

// passEnv are the variables of the worker's environment git may see: what
// it needs to find programs and reach a remote, nothing of the user's git
// configuration.
var passEnv = []string{
	"PATH", "TMPDIR", "SSH_AUTH_SOCK", "GIT_SSH_COMMAND",
	"http_proxy", "https_proxy", "no_proxy", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY",
}

func newGitRunner(home string, timeout time.Duration) (*gitRunner, error) {
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
	}
	for _, k := range passEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return &gitRunner{bin: bin, env: env, timeout: timeout}, nil
}

// gitCall is one git command.
type gitCall struct {
	dir   string   // working directory ("" = the process's)
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
	cmd.Dir = c.dir
	cmd.Env = append(append([]string(nil), g.env...), c.env...)
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
