//go:build unix

package runner

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/subjects"
)

// readPID waits for the PID file a script writes whole (by rename).
func readPID(t *testing.T, path string) int {
	t.Helper()
	require.Eventually(t, func() bool { _, err := os.Stat(path); return err == nil },
		10*time.Second, 5*time.Millisecond, "the script never wrote %s", path)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	require.NoError(t, err)
	return pid
}

// requireGone waits until pid is dead: no longer in /proc, or a zombie
// waiting for init to reap it.
func requireGone(t *testing.T, pid int) {
	t.Helper()
	require.Eventually(t, func() bool {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return true
		}
		s := string(b)
		i := strings.LastIndexByte(s, ')')
		return i < 0 || !strings.Contains(s[:i], "(sleep") || strings.HasPrefix(s[i:], ") Z")
	}, 10*time.Second, 5*time.Millisecond, "process %d outlived its role", pid)
}

func requireProc(t *testing.T) {
	t.Helper()
	if _, err := os.Stat("/proc/self/stat"); err != nil {
		t.Skip("needs /proc")
	}
}

func TestExecTimeoutKillsGroup(t *testing.T) {
	t.Parallel()
	requireProc(t)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	e := newExec(t, subjects.RoleImplementer, ExecConfig{Argv: []string{script(t, "hang.sh"), pidFile}})
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	_, err := e.Run(ctx, simReq(t, subjects.RoleImplementer, ""))
	require.ErrorIs(t, err, context.DeadlineExceeded)
	require.ErrorContains(t, err, "exec "+script(t, "hang.sh")+": killed")
	require.NotErrorIs(t, err, ErrPermanent)
	requireGone(t, readPID(t, pidFile))
}

func TestExecCancelKillsGroup(t *testing.T) {
	t.Parallel()
	requireProc(t)
	pidFile := filepath.Join(t.TempDir(), "child.pid")
	e := newExec(t, subjects.RoleImplementer, ExecConfig{Argv: []string{script(t, "hang.sh"), pidFile}})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	req := simReq(t, subjects.RoleImplementer, "")
	go func() {
		_, err := e.Run(ctx, req)
		done <- err
	}()
	pid := readPID(t, pidFile) // the child is running
	cancel()
	select {
	case err := <-done:
		require.ErrorIs(t, err, context.Canceled)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancellation")
	}
	requireGone(t, pid)
}

func TestExecLeftoverHoldingStdout(t *testing.T) {
	t.Parallel()
	requireProc(t)
	if _, err := exec.LookPath("setsid"); err != nil {
		t.Skip("needs setsid")
	}
	pidFile := filepath.Join(t.TempDir(), "leftover.pid")
	e := newExec(t, subjects.RolePlanner, ExecConfig{Argv: []string{script(t, "leftover.sh"), pidFile}})
	e.waitDelay = 50 * time.Millisecond
	res, err := e.Run(context.Background(), simReq(t, subjects.RolePlanner, ""))
	pid := readPID(t, pidFile)
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) }) // it left the group: ours to clean
	require.NoError(t, err, "Run returns although a process outside the group holds stdout")
	require.JSONEq(t, `{"plan":"left a process behind"}`, string(res.Output))
}

func TestExecOutputLimit(t *testing.T) {
	t.Parallel()
	e := newExec(t, subjects.RolePlanner, ExecConfig{Argv: []string{script(t, "spew.sh")}, MaxOutputBytes: 1024})
	_, err := e.Run(context.Background(), simReq(t, subjects.RolePlanner, ""))
	require.EqualError(t, err, "exec "+script(t, "spew.sh")+": stdout exceeds 1024 bytes; the process was killed")
	require.NotErrorIs(t, err, ErrPermanent)
}

// envRun runs env.sh as the planner with cfg and returns what it recorded.
func envRun(t *testing.T, cfg ExecConfig, req Request) (map[string]string, string) {
	t.Helper()
	out := t.TempDir()
	cfg.Argv = []string{script(t, "env.sh")}
	if cfg.Env == nil {
		cfg.Env = map[string]string{}
	}
	cfg.Env["DROVER_TEST_OUT"] = out
	e := newExec(t, subjects.RolePlanner, cfg)
	res, err := e.Run(context.Background(), req)
	require.NoError(t, err)
	require.JSONEq(t, `{"plan":"checked the environment"}`, string(res.Output))
	got := map[string]string{}
	entries, err := os.ReadDir(out)
	require.NoError(t, err)
	for _, de := range entries {
		b, err := os.ReadFile(filepath.Join(out, de.Name()))
		require.NoError(t, err)
		got[de.Name()] = string(b)
	}
	text, err := prompt.Defaults().Render(subjects.RolePlanner, promptData(req))
	require.NoError(t, err)
	return got, text
}

func TestExecEnvironment(t *testing.T) {
	t.Parallel()
	// os.Setenv, not t.Setenv: the test is parallel and the names are its own.
	require.NoError(t, os.Setenv("DROVER_TEST_LEAK", "leaked"))
	require.NoError(t, os.Setenv("DROVER_TEST_KEEP", "kept"))
	dir := t.TempDir()
	got, text := envRun(t, ExecConfig{
		Dir: dir, Inherit: append([]string{"DROVER_TEST_KEEP"}, DefaultInherit...), PromptFile: true,
	}, simReq(t, subjects.RolePlanner, ""))
	require.Equal(t, "unset", got["leak"], "a variable not in Inherit never reaches the child")
	require.Equal(t, "kept", got["keep"])
	require.Equal(t, "planner", got["role"])
	require.Equal(t, text, got["prompt_env"], "the prompt in DROVER_PROMPT")
	require.Equal(t, text, got["prompt_file"], "the prompt in DROVER_PROMPT_FILE")
	require.NoFileExists(t, got["prompt_file_path"], "the prompt file is removed after the run")
	wd, err := filepath.EvalSymlinks(dir)
	require.NoError(t, err)
	require.Equal(t, wd, strings.TrimSpace(got["pwd"]))
}

func TestExecPromptSettings(t *testing.T) {
	t.Parallel()
	got, _ := envRun(t, ExecConfig{PromptEnv: NoPromptEnv}, simReq(t, subjects.RolePlanner, ""))
	require.Equal(t, "unset", got["prompt_env"])
	require.Equal(t, "unset", got["prompt_file_path"])

	got, text := envRun(t, ExecConfig{PromptEnv: "MY_PROMPT", Env: map[string]string{"DROVER_PROMPT": "mine"}}, simReq(t, subjects.RolePlanner, ""))
	require.Equal(t, "mine", got["prompt_env"], "Env is passed as configured")
	require.NotEmpty(t, text)

	big := simReq(t, subjects.RolePlanner, "")
	big.Task.Scope = strings.Repeat("a long scope ", 20000)
	got, text = envRun(t, ExecConfig{}, big)
	require.Equal(t, "unset", got["prompt_env"], "too large for one variable")
	require.Equal(t, text, got["prompt_file"], "so it goes to the file")
}

func TestExecRunsConcurrently(t *testing.T) {
	t.Parallel()
	e := newExec(t, subjects.RoleJudge, ExecConfig{Argv: []string{script(t, "verdict.sh")}})
	errs := make(chan error, 8)
	req := simReq(t, subjects.RoleJudge, "")
	for range cap(errs) {
		go func() {
			_, err := e.Run(context.Background(), req)
			errs <- err
		}()
	}
	for range cap(errs) {
		err := natstest.Recv(t, errs, 30*time.Second)
		require.NotErrorIs(t, err, ErrPermanent)
		require.NoError(t, err)
	}
}
