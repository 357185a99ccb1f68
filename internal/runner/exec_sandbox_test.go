//go:build linux

package runner

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/internal/sandbox/sandboxtest"
	"github.com/droverhq/drover/subjects"
)

func newSandbox(t testing.TB, cfg sandbox.Config) *sandbox.Sandbox {
	t.Helper()
	s, err := sandbox.New(cfg)
	require.NoError(t, err)
	return s
}

// runContained runs script as a sandboxed planner (plain text output) and
// returns its output trimmed.
func runContained(t *testing.T, cfg ExecConfig, script string, ws *Workspace) (string, error) {
	t.Helper()
	cfg.Argv = []string{"sh", "-c", script}
	e, err := NewExec(subjects.RolePlanner, cfg, nil)
	require.NoError(t, err)
	req := simReq(t, subjects.RolePlanner, "")
	req.Workspace = ws
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res, err := e.Run(ctx, req)
	if err != nil {
		return "", err
	}
	var out struct{ Plan string }
	require.NoError(t, json.Unmarshal(res.Output, &out))
	return strings.TrimSpace(out.Plan), nil
}

// A hostile agent reads none of the worker's environment, through its own
// variables or any /proc; without the sandbox the same agent reads it
// (so the check can fail).
func TestExecSandboxHidesTheWorkersEnvironment(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	// os.Setenv, not t.Setenv: the test is parallel and the name is its own.
	require.NoError(t, os.Setenv("DROVER_TEST_SANDBOX_SECRET", "hunter2-sandbox"))
	// A process of the worker's with the secret in its environment (the
	// test's own /proc environ shows only what it started with).
	holder := exec.Command("sleep", "300")
	holder.Env = []string{"DROVER_TEST_SANDBOX_SECRET=hunter2-sandbox"}
	require.NoError(t, holder.Start())
	t.Cleanup(func() { _ = holder.Process.Kill(); _ = holder.Wait() })
	steal := fmt.Sprintf(`{ env; cat /proc/1/environ /proc/%d/environ /proc/%d/environ /proc/*/environ; } 2>/dev/null | tr '\0' '\n' | grep -c hunter2-sandbox | sed s/^/count=/`, os.Getpid(), holder.Process.Pid)
	got, err := runContained(t, ExecConfig{Sandbox: newSandbox(t, sandbox.Config{}), Inherit: []string{"PATH", "HOME"}}, steal, nil)
	require.NoError(t, err)
	require.Equal(t, "count=0", got, "the secret was read")

	got, err = runContained(t, ExecConfig{Dir: t.TempDir()}, steal, nil)
	require.NoError(t, err)
	require.NotEqual(t, "count=0", got, "uncontained, the agent reads the worker's /proc")
}

// The contained child: no new privileges, its own PID namespace, a
// private writable HOME replacing the inherited one (a temporary one,
// removed after the run, as the prompt file is written there), TMPDIR,
// the prompt file visible, and a fresh private working directory.
func TestExecSandboxedChild(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	script := `grep NoNewPrivs /proc/self/status | tr -d '\t '
echo $$
echo hi > "$HOME/f" && cat "$HOME/f"
echo "$HOME"
echo "$TMPDIR"
pwd -P
cat "$DROVER_PROMPT_FILE" | head -c 0; [ -r "$DROVER_PROMPT_FILE" ] && echo prompt-readable
echo "$DROVER_ROLE"`
	got, err := runContained(t, ExecConfig{Sandbox: newSandbox(t, sandbox.Config{}), PromptFile: true}, script, nil)
	require.NoError(t, err)
	lines := strings.Split(got, "\n")
	require.Len(t, lines, 8, got)
	require.Equal(t, "NoNewPrivs:1", lines[0])
	require.Equal(t, "1", lines[1], "the agent is PID 1 of its own namespace")
	require.Equal(t, "hi", lines[2])
	require.NotEqual(t, os.Getenv("HOME"), lines[3], "HOME is private")
	require.Equal(t, "/tmp", lines[4])
	require.Equal(t, "prompt-readable", lines[6])
	require.Equal(t, "planner", lines[7])
	require.Equal(t, "/tmp/work", lines[5], "a fresh private working directory")
	require.NoDirExists(t, lines[3], "the temporary HOME is removed")
}

// A process the agent leaves running in the background dies with its
// role: none is left when Run returns.
func TestExecSandboxKillsLeftovers(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	mark := strconv.Itoa(int(time.Now().UnixNano()%1e6)) + ".5"
	work := t.TempDir()
	script := `sleep 1000` + mark + ` >/dev/null 2>&1 & echo $! > pid; setsid sleep 1000` + mark + ` >/dev/null 2>&1 & echo done`
	got, err := runContained(t, ExecConfig{Sandbox: newSandbox(t, sandbox.Config{})}, script, &Workspace{Dir: work})
	require.NoError(t, err)
	require.Equal(t, "done", got)
	require.FileExists(t, filepath.Join(work, "pid"))
	left, err := procsWith("1000" + mark)
	require.NoError(t, err)
	require.Empty(t, left, "a background process outlived its role")
}

// procsWith lists the PIDs whose command line holds arg.
func procsWith(arg string) ([]string, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range ents {
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.Contains(string(b), arg) {
			out = append(out, e.Name())
		}
	}
	return out, nil
}

// network: false cuts the network: a listener on loopback the test opened
// is reached with the network on and not with it off.
func TestExecSandboxNetwork(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	defer func() { _ = ln.Close() }() // the test is over
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			_ = c.Close()
		}
	}()
	script := fmt.Sprintf(`bash -c 'echo > /dev/tcp/127.0.0.1/%d' 2>/dev/null && echo connected || echo refused`, ln.Addr().(*net.TCPAddr).Port)
	for _, tc := range []struct {
		noNetwork bool
		want      string
	}{{false, "connected"}, {true, "refused"}} {
		got, err := runContained(t, ExecConfig{Sandbox: newSandbox(t, sandbox.Config{}), NoNetwork: tc.noNetwork}, script, nil)
		require.NoError(t, err)
		require.Equal(t, tc.want, got, "network: %v", !tc.noNetwork)
	}
}

func TestExecSandboxConfigErrors(t *testing.T) {
	t.Parallel()
	_, err := NewExec(subjects.RolePlanner, ExecConfig{Argv: []string{"true"}, NoNetwork: true, Sandbox: newSandbox(t, sandbox.Config{Mode: sandbox.ModeNone})}, nil)
	require.ErrorContains(t, err, "network: false needs the bubblewrap sandbox, and sandbox.mode is none")
	// Without a sandbox (drover config check builds runners so) it is
	// built, and every run fails rather than reach the network.
	open, err := NewExec(subjects.RolePlanner, ExecConfig{Argv: []string{"true"}, NoNetwork: true}, nil)
	require.NoError(t, err)
	_, err = open.Run(context.Background(), simReq(t, subjects.RolePlanner, ""))
	require.ErrorIs(t, err, ErrPermanent)
	require.ErrorContains(t, err, "network: false needs the bubblewrap sandbox")

	// A program the sandbox does not show is a permanent error naming it.
	dir := t.TempDir()
	prog := filepath.Join(dir, "agent")
	require.NoError(t, os.WriteFile(prog, []byte("#!/bin/sh\necho hi\n"), 0o755))
	e, err := NewExec(subjects.RolePlanner, ExecConfig{Argv: []string{prog}, Sandbox: newSandbox(t, sandbox.Config{})}, nil)
	require.NoError(t, err)
	_, err = e.Run(context.Background(), simReq(t, subjects.RolePlanner, ""))
	require.ErrorIs(t, err, ErrPermanent)
	require.ErrorContains(t, err, prog+" is not visible in the sandbox")
}

// With a configured dir the agent runs there, read-only, and finds the
// worktree in DROVER_WORKSPACE.
func TestExecSandboxConfiguredDir(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	own, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(own, "agent.sh"), []byte("pwd -P; touch x 2>/dev/null && echo wrote; touch \"$DROVER_WORKSPACE/y\" && echo ws-ok\n"), 0o755))
	wt, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	e, err := NewExec(subjects.RolePlanner, ExecConfig{Argv: []string{"./agent.sh"}, Dir: own, Sandbox: newSandbox(t, sandbox.Config{})}, nil)
	require.NoError(t, err)
	req := simReq(t, subjects.RolePlanner, "")
	req.Workspace = &Workspace{Dir: wt}
	res, err := e.Run(context.Background(), req)
	require.NoError(t, err)
	var out struct{ Plan string }
	require.NoError(t, json.Unmarshal(res.Output, &out))
	require.Equal(t, own+"\nws-ok", strings.TrimSpace(out.Plan))
	require.FileExists(t, filepath.Join(wt, "y"))
}

// Without bubblewrap (sandbox.mode none) a role without a workspace gets
// a temporary working directory and HOME, removed after the run, and
// still only the built environment.
func TestExecSandboxNoneTemporaryDirs(t *testing.T) {
	t.Parallel()
	got, err := runContained(t, ExecConfig{Sandbox: newSandbox(t, sandbox.Config{Mode: sandbox.ModeNone})},
		`pwd -P; echo "$HOME"; echo x > "$HOME/f" && echo home-writable`, nil)
	require.NoError(t, err)
	lines := strings.Split(got, "\n")
	require.Len(t, lines, 3, got)
	require.NotEqual(t, os.Getenv("HOME"), lines[1])
	require.Equal(t, "home-writable", lines[2])
	require.NoDirExists(t, lines[0], "the temporary working directory is removed")
	require.NoDirExists(t, lines[1], "the temporary HOME is removed")
}

// A contained role that hangs is killed at its deadline with everything
// it started, and one that floods stdout is killed at the bound: the
// process-group kill and the output bound hold under the sandbox.
func TestExecSandboxKillAndBound(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	mark := strconv.Itoa(int(time.Now().UnixNano()%1e6)) + ".25"
	e, err := NewExec(subjects.RolePlanner, ExecConfig{Argv: []string{"sh", "-c", `sleep 2000` + mark + ` & sleep 2000` + mark},
		Sandbox: newSandbox(t, sandbox.Config{})}, nil)
	require.NoError(t, err)
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	_, err = e.Run(ctx, simReq(t, subjects.RolePlanner, ""))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.Eventually(t, func() bool { left, err := procsWith("2000" + mark); return err == nil && len(left) == 0 },
		10*time.Second, 5*time.Millisecond, "a process of the killed role is still alive")

	flood, err := NewExec(subjects.RolePlanner, ExecConfig{Argv: []string{"sh", "-c", `yes flood`}, MaxOutputBytes: 1 << 16,
		Sandbox: newSandbox(t, sandbox.Config{})}, nil)
	require.NoError(t, err)
	runCtx, cancelRun := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancelRun()
	_, err = flood.Run(runCtx, simReq(t, subjects.RolePlanner, ""))
	require.ErrorContains(t, err, "stdout exceeds 65536 bytes")
}

// The sandbox leaves the identity as it was; cutting the network changes
// it.
func TestExecSandboxIdentity(t *testing.T) {
	t.Parallel()
	id := func(cfg ExecConfig) string {
		e, err := NewExec(subjects.RoleJudge, cfg, nil)
		require.NoError(t, err)
		return e.Identity()
	}
	box := newSandbox(t, sandbox.Config{})
	base := ExecConfig{Argv: []string{"agent"}, Dir: "/work"}
	ref := id(base)
	boxed := base
	boxed.Sandbox = box
	require.Equal(t, ref, id(boxed), "the sandbox changes no answer")
	boxed.NoNetwork = true
	require.NotEqual(t, ref, id(boxed), "network: false")
}

// In a workspace the contained agent runs in the worktree, under its real
// path, and gets the workspace's variables and the trace context.
func TestExecSandboxWorkspaceVariables(t *testing.T) {
	sandboxtest.Require(t)
	t.Parallel()
	wt, err := filepath.EvalSymlinks(t.TempDir())
	require.NoError(t, err)
	e, err := NewExec(subjects.RoleImplementer, ExecConfig{Argv: []string{"sh", "-c", whereAmI + `; printf ' %s' "$TRACEPARENT"`},
		Sandbox: newSandbox(t, sandbox.Config{})}, nil)
	require.NoError(t, err)
	req := simReq(t, subjects.RoleImplementer, "")
	req.Workspace = &Workspace{Dir: wt, Branch: "drover/wf/T1", Base: "4b825dc642cb6eb9a060e54bf8d69288fbee4904",
		Sandbox: sandbox.Paths{Work: wt, Home: filepath.Join(t.TempDir(), "home")}}
	req.TraceParent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	res, err := e.Run(context.Background(), req)
	require.NoError(t, err)
	var out struct{ Change string }
	require.NoError(t, json.Unmarshal(res.Output, &out))
	require.Equal(t, fmt.Sprintf(`{"dir":"%s","ws":"%s","branch":"drover/wf/T1","base":"%s"} %s`, wt, wt, req.Workspace.Base, req.TraceParent), out.Change)
}
