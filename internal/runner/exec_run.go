package runner

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/droverhq/drover/subjects"
)

// Run implements Runner. It starts Argv directly (no shell: the task's text
// reaches the child only through stdin, the prompt variable and the prompt
// file, never as a command or argument), waits for it, and parses stdout
// with ParseOutput. When ctx is done, or stdout exceeds its bound, the
// child's whole process group is killed and Run returns promptly. A missing
// binary or working directory and a template that fails to render are
// ErrPermanent; anything else (non-zero exit, unparsable output) is retried.
// A preset agent's implementer keeps its session (runSession).
func (e *Exec) Run(ctx context.Context, req Request) (Result, error) {
	if e.cfg.Agent != "" && req.Role == subjects.RoleImplementer && req.Role == e.role {
		return e.runSession(ctx, req)
	}
	return e.run(ctx, req, e.cfg.Argv, nil)
}

// run runs argv (the configured one, or a preset's resume command) with
// the rendered prompt, or with prompt when it is not nil.
func (e *Exec) run(ctx context.Context, req Request, argv []string, prompt *string) (Result, error) {
	name := argv[0]
	if req.Role != e.role {
		return Result{}, Permanentf("exec %s: runner for %s got a %s request", name, e.role, req.Role)
	}
	text, err := e.render(req, prompt)
	if err != nil {
		return Result{}, Permanentf("exec %s: %v", name, err)
	}
	stdin, err := e.stdin(req, text)
	if err != nil {
		return Result{}, fmt.Errorf("exec %s: encode stdin: %w", name, err)
	}
	vars := e.baseEnv()
	if req.TraceParent != "" {
		vars[TraceParentEnv] = req.TraceParent
	}
	dir := e.cfg.Dir
	if w := req.Workspace; w != nil {
		vars[WorkspaceEnv], vars[BranchEnv], vars[BaseSHAEnv] = w.Dir, w.Branch, w.Base
		if dir == "" {
			dir = w.Dir // the task's worktree, unless the config names a dir
		}
	}
	var box *boxPaths
	if e.cfg.NoNetwork && e.cfg.Sandbox == nil {
		return Result{}, Permanentf("exec %s: network: false needs the bubblewrap sandbox, and this runner has none", name)
	}
	if e.cfg.Sandbox != nil {
		if box, err = e.boxPaths(req.Workspace, e.promptToFile(text)); err != nil {
			return Result{}, fmt.Errorf("exec %s: sandbox: %w", name, err)
		}
		defer box.cleanup()
	}
	path, err := e.resolve(vars)
	if err == nil && box != nil && !e.cfg.Sandbox.Visible(box.spec, path) {
		err = fmt.Errorf("%s is not visible in the sandbox: add its directory to sandbox.read_only", path)
	}
	if err != nil {
		return Result{}, Permanentf("exec %s: %v", name, err)
	}
	promptDir := ""
	if box != nil {
		promptDir = box.spec.Paths.Home // visible inside, private to the run
	}
	env, cleanup, err := e.promptEnv(vars, text, promptDir)
	if err != nil {
		return Result{}, fmt.Errorf("exec %s: %w", name, err)
	}
	defer cleanup()

	runCtx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	stdout := &limitWriter{max: e.cfg.MaxOutputBytes, over: func() { cancel(errStdoutLimit) }}
	stderr := &tailWriter{max: e.cfg.MaxStderrBytes}
	var cmd *exec.Cmd
	if box == nil {
		cmd = exec.CommandContext(runCtx, path, argv[1:]...)
		cmd.Args[0] = name
		cmd.Dir, cmd.Env = dir, env
	} else {
		box.spec.Env = env
		cmd, err = e.cfg.Sandbox.Command(runCtx, box.spec, append([]string{path}, argv[1:]...))
		if err != nil {
			return Result{}, fmt.Errorf("exec %s: %w", name, err)
		}
	}
	cmd.Stdin, cmd.Stdout, cmd.Stderr = bytes.NewReader(stdin), stdout, stderr
	var live *activityWriter
	if req.Activity != nil {
		// Each line as it comes, to the role's live activity; the output
		// is still read whole from stdout's buffer at the end.
		live = &activityWriter{decode: agentPresets[e.cfg.Agent].activity, emit: req.Activity}
		cmd.Stdout = io.MultiWriter(stdout, live)
	}
	cmd.WaitDelay = e.waitDelay
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		if errors.Is(err, fs.ErrNotExist) || errors.Is(err, fs.ErrPermission) {
			err = Permanentf("%v", err)
		}
		return Result{}, fmt.Errorf("exec %s: start: %w", name, err)
	}
	err = cmd.Wait()
	killGroup(cmd) // no process outlives its role
	if live != nil {
		live.flush() // a last line without its newline
	}
	switch {
	case stdout.exceeded:
		return Result{}, fmt.Errorf("exec %s: stdout exceeds %d bytes; the process was killed", name, e.cfg.MaxOutputBytes)
	case ctx.Err() != nil:
		return Result{}, fmt.Errorf("exec %s: killed: %w%s", name, context.Cause(ctx), stderr.suffix())
	case e.cfg.Agent != "": // the agent's own report: answer, usage, error
		return e.agentResult(ctx, stdout.buf.Bytes(), err, stderr.suffix())
	case errors.Is(err, exec.ErrWaitDelay):
		// It exited 0 and a process it left behind still held stdout:
		// what it wrote before exiting is its answer.
	case err != nil:
		return Result{}, fmt.Errorf("exec %s: %w%s", name, err, stderr.suffix())
	}
	res, err := ParseOutput(ctx, e.role, stdout.buf.Bytes())
	if err != nil {
		return Result{}, fmt.Errorf("exec %s: %w%s", name, err, stderr.suffix())
	}
	if md := agentUsage(ctx, stdout.buf.Bytes()); md != nil {
		if res.Metadata == nil {
			res.Metadata = make(map[string]any, len(md))
		}
		for k, v := range md {
			res.Metadata[k] = v
		}
	}
	return res, nil
}

// baseEnv is the child's environment before the prompt: the inherited
// variables that are set, Env on top, and DROVER_ROLE; sorted by name.
func (e *Exec) baseEnv() map[string]string {
	env := make(map[string]string, len(e.cfg.Inherit)+len(e.cfg.Env)+3)
	for _, name := range e.cfg.Inherit {
		if v, ok := os.LookupEnv(name); ok {
			env[name] = v
		}
	}
	for k, v := range e.cfg.Env {
		env[k] = v
	}
	env[RoleEnv] = string(e.role)
	return env
}

// promptEnv adds the prompt variable and file (made in dir; "": the
// temporary directory) to env and returns it as a list, with a cleanup
// that removes the file.
func (e *Exec) promptEnv(env map[string]string, text, dir string) ([]string, func(), error) {
	cleanup := func() {}
	if e.cfg.PromptEnv != NoPromptEnv && len(text) <= maxPromptEnvBytes {
		env[e.cfg.PromptEnv] = text
	}
	if e.promptToFile(text) {
		f, err := os.CreateTemp(dir, "drover-prompt-*.txt")
		if err != nil {
			return nil, cleanup, fmt.Errorf("prompt file: %w", err)
		}
		cleanup = func() { _ = os.Remove(f.Name()) }
		_, werr := f.WriteString(text)
		if cerr := f.Close(); werr == nil {
			werr = cerr
		}
		if werr != nil {
			cleanup()
			return nil, func() {}, fmt.Errorf("prompt file: %w", werr)
		}
		env[PromptFileEnv] = f.Name()
	}
	list := make([]string, 0, len(env))
	for k, v := range env {
		list = append(list, k+"="+v)
	}
	sort.Strings(list)
	return list, cleanup, nil
}

// promptToFile reports whether the prompt text is written to a file: when
// configured, or when it is too large for its variable.
func (e *Exec) promptToFile(text string) bool {
	return e.cfg.PromptFile || (e.cfg.PromptEnv != NoPromptEnv && len(text) > maxPromptEnvBytes)
}

// resolve finds Argv[0]: a name with a slash relative to Dir, else in the
// absolute entries of the child's PATH. The working directory must exist.
func (e *Exec) resolve(env map[string]string) (string, error) {
	if e.cfg.Dir != "" {
		if info, err := os.Stat(e.cfg.Dir); err != nil || !info.IsDir() {
			return "", fmt.Errorf("working directory %q is not a directory", e.cfg.Dir)
		}
	}
	name := e.cfg.Argv[0]
	if strings.Contains(name, "/") {
		p := name
		if !filepath.IsAbs(p) {
			p = filepath.Join(e.cfg.Dir, p)
		}
		abs, err := filepath.Abs(p)
		if err == nil {
			err = executable(abs)
		}
		return abs, err
	}
	for _, dir := range filepath.SplitList(env["PATH"]) {
		if !filepath.IsAbs(dir) {
			continue // never run a program from a relative PATH entry
		}
		p := filepath.Join(dir, name)
		if executable(p) == nil {
			return p, nil
		}
	}
	return "", fmt.Errorf("%q not found in the child's PATH %q", name, env["PATH"])
}

// executable reports why p is not an executable regular file, if it is not.
func executable(p string) error {
	info, err := os.Stat(p)
	switch {
	case err != nil:
		return err
	case !info.Mode().IsRegular():
		return fmt.Errorf("%s is not a regular file", p)
	case info.Mode().Perm()&0o111 == 0:
		return fmt.Errorf("%s is not executable", p)
	}
	return nil
}
