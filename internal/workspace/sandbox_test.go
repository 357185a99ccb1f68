//go:build linux

package workspace

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/internal/sandbox/sandboxtest"
	"github.com/droverhq/drover/subjects"
)

// snapshot is the content of every file under roots but those below skip.
func snapshot(t *testing.T, roots, skip []string) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, root := range roots {
		require.NoError(t, filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
			if err != nil {
				return err
			}
			for _, s := range skip {
				if p == s {
					return filepath.SkipDir
				}
			}
			info, err := d.Info()
			if err != nil {
				return err
			}
			sum := info.Mode().String()
			if d.Type().IsRegular() {
				b, err := os.ReadFile(p)
				if err != nil {
					return err
				}
				h := sha256.Sum256(b)
				sum += " " + hex.EncodeToString(h[:])
			} else if d.Type()&fs.ModeSymlink != 0 {
				target, _ := os.Readlink(p)
				sum += " -> " + target
			}
			out[p] = sum
			return nil
		}))
	}
	return out
}

// Hostile agents run by the exec runner in the sandbox, in a real task
// worktree beside another task's: each attack fails, nothing outside the
// task's worktree (its admin directory, which holds its private object
// store, and its HOME) changes, and git inside the worktree still works,
// so Drover records the agent's own commit.
func TestSandboxedHostileAgents(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, nil)
	ctx := context.Background()
	data := filepath.Join(filepath.Dir(m.cfg.Dir), "data") // the worker's data directory
	writeFile(t, data, "store/stream.blk", "the embedded server's store\n")
	sb, err := sandbox.New(sandbox.Config{Hide: []string{data}})
	require.NoError(t, err)

	w1 := openTask(t, m, repo.base, "T1")
	w2 := openTask(t, m, repo.base, "T2")
	gitT(t, w1.Dir(), "checkout", "-q", "--detach") // Drover detaches HEAD: the mirror's refs are read-only
	paths := w1.SandboxPaths()
	admin1, admin2 := paths.Writable[0], filepath.Join(m.mirror, "worktrees", filepath.Base(w2.Dir()))
	require.DirExists(t, admin1)
	require.DirExists(t, admin2)

	// A process of the worker's whose environment holds a secret.
	holder := exec.Command("sleep", "300")
	holder.Env = []string{"DROVER_TEST_FORGE_TOKEN=ghp-sandbox-secret"}
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	mark := strconv.Itoa(int(time.Now().UnixNano()%1e6)) + ".5"

	require.NoError(t, os.MkdirAll(paths.Home, 0o700))
	skip := []string{w1.Dir(), admin1, paths.Home} // the mirror's objects included: the agent's go to admin1
	roots := []string{m.cfg.Dir, data}
	for _, tc := range []struct {
		name, script string
		want, never  []string
	}{
		{"another task's worktree", fmt.Sprintf(`
			[ -e %[1]s ] && echo visible
			echo pwned > %[1]s/README.md; mkdir -p %[1]s && echo pwned > %[1]s/new.txt
			echo pwned > %[2]s/HEAD; ls %[3]s`, w2.Dir(), admin2, filepath.Dir(admin2)),
			[]string{filepath.Base(admin1)}, []string{"visible", filepath.Base(admin2)}},
		{"the mirror's config, refs and hooks", fmt.Sprintf(`
			git config --file %[1]s/config core.hooksPath /tmp && echo wrote-config
			echo '#!/bin/sh' > %[1]s/hooks/post-commit && echo wrote-hook
			git update-ref refs/heads/main HEAD && echo moved-main
			echo 0000000000000000000000000000000000000000 > %[1]s/refs/heads/main && echo wrote-ref
			git -c user.name=a -c user.email=a@b tag evil && echo tagged
			echo tried`, m.mirror),
			[]string{"tried"}, []string{"wrote-config", "wrote-hook", "moved-main", "wrote-ref", "tagged"}},
		{"the data directory", fmt.Sprintf(`
			cat %[1]s/store/stream.blk; echo pwned > %[1]s/store/stream.blk && echo wrote
			mkdir -p %[1]s/store; echo pwned > %[1]s/store/x; echo tried`, data),
			[]string{"tried"}, []string{"the embedded server's store", "wrote"}},
		{"the worker's environment", fmt.Sprintf(`
			{ env; cat /proc/1/environ /proc/%d/environ /proc/%d/environ /proc/*/environ; } 2>/dev/null | tr '\0' '\n' | grep -c ghp-sandbox | sed s/^/count=/`,
			os.Getpid(), holder.Process.Pid),
			[]string{"count=0"}, []string{"ghp-sandbox"}},
		{"a process left running", `sleep 1000` + mark + ` >/dev/null 2>&1 & echo $! > bg.pid; echo started`,
			[]string{"started"}, nil},
		{"git in the worktree", `
			git log --oneline | grep -c initial
			echo agent >> README.md
			git diff --stat | tail -1
			git add -A && git -c user.name=Agent -c user.email=agent@localhost commit -qm "agent's commit" && echo committed
			echo "$HOME" > /dev/null; echo home > "$HOME/.gitconfig" && echo home-writable`,
			[]string{"1", "1 file changed", "committed", "home-writable"}, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := snapshot(t, roots, skip)
			e, err := runner.NewExec(subjects.RoleImplementer, runner.ExecConfig{Argv: []string{"sh", "-c", tc.script}, Sandbox: sb}, nil)
			require.NoError(t, err)
			req := runner.Request{Role: subjects.RoleImplementer, Task: subjects.TaskRequest{ID: "T1", Workflow: "wf", Scope: "s", Verification: "v"}, Attempt: 1,
				Workspace: &runner.Workspace{Dir: w1.Dir(), Branch: w1.Branch(), Base: w1.Base(), Sandbox: paths}}
			runCtx, cancel := context.WithTimeout(ctx, time.Minute)
			defer cancel()
			res, err := e.Run(runCtx, req)
			require.NoError(t, err)
			var out struct{ Change string }
			require.NoError(t, json.Unmarshal(res.Output, &out))
			for _, w := range tc.want {
				require.Contains(t, out.Change, w)
			}
			for _, n := range tc.never {
				require.NotContains(t, out.Change, n)
			}
			require.Empty(t, changed(before, snapshot(t, roots, skip)), "something outside the task's worktree changed")
			require.Empty(t, procsWith(t, "1000"+mark), "a background process outlived its role")
		})
	}

	ch, err := w1.Commit(ctx, Trailers{Workflow: "wf", Task: "T1", Attempt: 1}, "implementer")
	require.NoError(t, err)
	// The agent's commit on the detached HEAD is adopted, beneath Drover's
	// own commit with the trailers.
	require.Equal(t, 2, ch.Commits, "the agent's commit on the detached HEAD is adopted")
	_, err = fileStat(ch.Files, "README.md")
	require.NoError(t, err)
	require.Equal(t, repo.base, gitT(t, w2.Dir(), "rev-parse", "HEAD"), "the other task is untouched")
	require.Empty(t, gitT(t, w2.Dir(), "status", "--porcelain"))
}

// changed lists the paths whose entries differ between a and b.
func changed(a, b map[string]string) []string {
	var out []string
	for p, v := range a {
		if b[p] != v {
			out = append(out, p)
		}
	}
	for p := range b {
		if _, ok := a[p]; !ok {
			out = append(out, p)
		}
	}
	return out
}

// procsWith lists the PIDs whose command line holds arg.
func procsWith(t *testing.T, arg string) []string {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	require.NoError(t, err)
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), arg) {
			out = append(out, e.Name())
		}
	}
	return out
}

// A task's HOME is its own: the next task in the same worktree gets a
// fresh one, and the one before is removed. The scratch worktree's HOME
// goes with it.
func TestSandboxHomes(t *testing.T) {
	t.Parallel()
	repo := newTestRepo(t)
	m := newManager(t, repo.remote, func(c *Config) { c.MaxWorktrees = 1 })
	ctx := context.Background()
	w1 := openTask(t, m, repo.base, "T1")
	p1 := w1.SandboxPaths()
	require.Equal(t, p1, w1.SandboxPaths(), "the same for every role of the task")
	writeFile(t, p1.Home, ".gitconfig", "[core]\n\tfsmonitor = /tmp/evil\n")
	require.NoError(t, w1.Release(ctx, false))

	w2 := openTask(t, m, repo.base, "T2")
	require.Equal(t, w1.Dir(), w2.Dir(), "the worktree is reused")
	p2 := w2.SandboxPaths()
	require.NotEqual(t, p1.Home, p2.Home)
	require.NoDirExists(t, p1.Home, "the earlier task's HOME is removed")
	require.Equal(t, filepath.Dir(p1.Home), filepath.Dir(p2.Home))

	s, err := m.Scratch(ctx, repo.base)
	require.NoError(t, err)
	sp := s.SandboxPaths()
	require.Equal(t, s.Dir(), sp.Work)
	writeFile(t, sp.Home, "f", "x")
	s.Close(ctx)
	require.NoDirExists(t, sp.Home, "the scratch's HOME goes with it")
}
