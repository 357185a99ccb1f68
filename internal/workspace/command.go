package workspace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/droverhq/drover/internal/sandbox"
)

// runCommand starts a setup or cleanup command or the merge check in
// p.Work, contained by the sandbox (nil: uncontained), with no shell and
// its timeout. Its environment is built, never inherited: the worker's
// PATH, the variables c.Env names, then env (Drover's DROVER_*, which
// win). The error holds the tail of its output.
func (m *Manager) runCommand(ctx context.Context, p sandbox.Paths, c Command, env []string) error {
	timeout := c.Timeout
	if timeout <= 0 {
		timeout = DefaultCommandTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	spec := sandbox.Spec{Paths: p, Env: commandEnv(c.Env, env, os.LookupEnv)}
	var cmd *exec.Cmd
	if sb := m.sb; sb != nil {
		var err error
		if cmd, err = sb.Command(ctx, spec, c.Argv); err != nil {
			return err
		}
	} else {
		cmd = exec.CommandContext(ctx, c.Argv[0], c.Argv[1:]...)
		if p.Home != "" {
			if err := os.MkdirAll(p.Home, 0o700); err != nil {
				return err
			}
			spec.Env = append(spec.Env, "HOME="+p.Home)
		}
		spec.Env = append(spec.Env, p.Env...)
	}
	if cmd.Env == nil { // a nil Env would inherit the worker's: never
		cmd.Env = spec.Env
	}
	if cmd.Dir == "" {
		cmd.Dir = p.Work
	}
	out := &capWriter{max: maxStderr, tail: true}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("timed out after %v", timeout)
		}
		return fmt.Errorf("%v: %s", err, strings.TrimSpace(out.buf.String()))
	}
	return nil
}

// commandEnv is a command's environment: PATH from the worker, each of
// named ("NAME" takes the worker's value when set, "NAME=value" is
// literal), then drover's own variables.
func commandEnv(named, drover []string, lookup func(string) (string, bool)) []string {
	env := make([]string, 0, 1+len(named)+len(drover))
	if v, ok := lookup("PATH"); ok {
		env = append(env, "PATH="+v)
	}
	for _, e := range named {
		if strings.Contains(e, "=") {
			env = append(env, e)
		} else if v, ok := lookup(e); ok {
			env = append(env, e+"="+v)
		}
	}
	return append(env, drover...)
}

// copyIgnored copies the CopyIgnored paths and globs from CopyFrom into dir.
// Directories are copied recursively, symbolic links and other special
// files skipped, at most DefaultMaxCopyBytes in all; nothing outside
// CopyFrom is read, and nothing outside dir is written: every write is
// resolved beneath dir (os.Root), so a symbolic link the worktree holds
// that leads out of it is an error, never written through.
func (m *Manager) copyIgnored(dir string) error {
	if len(m.cfg.CopyIgnored) == 0 {
		return nil
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // a directory handle: its files are closed on their own
	src := m.cfg.CopyFrom
	budget := int64(DefaultMaxCopyBytes)
	for _, pattern := range m.cfg.CopyIgnored {
		matches, err := filepath.Glob(filepath.Join(src, pattern))
		if err != nil {
			return err
		}
		for _, from := range matches {
			rel, err := filepath.Rel(src, from)
			if err != nil || rel == "." || strings.HasPrefix(rel, "..") || rel == ".git" || strings.HasPrefix(rel, ".git"+string(filepath.Separator)) {
				continue
			}
			if err := copyTree(from, root, rel, &budget); err != nil {
				return fmt.Errorf("%s: %w", rel, err)
			}
		}
	}
	return nil
}

// copyTree copies from (a file or a directory) to the path to beneath root.
func copyTree(from string, root *os.Root, to string, budget *int64) error {
	return filepath.WalkDir(from, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(from, p)
		target := filepath.Join(to, rel)
		switch {
		case d.IsDir():
			if d.Name() == ".git" {
				return filepath.SkipDir
			}
			return root.MkdirAll(target, 0o755)
		case !d.Type().IsRegular():
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if *budget -= fi.Size(); *budget < 0 {
			return errors.New("over 64 MiB copied")
		}
		return copyFile(p, root, target, fi.Mode().Perm())
	})
}

// copyFile copies the regular file from to the path to beneath root,
// replacing what is there (a link is removed, never written through).
func copyFile(from string, root *os.Root, to string, perm fs.FileMode) error {
	in, err := os.Open(from)
	if err != nil {
		return err
	}
	defer func() { _ = in.Close() }() // read only
	if err := root.MkdirAll(filepath.Dir(to), 0o755); err != nil {
		return err
	}
	_ = root.Remove(to)
	out, err := root.OpenFile(to, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		_ = out.Close() // the write already failed: that error is returned
		return err
	}
	return out.Close()
}
