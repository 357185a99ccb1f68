//go:build unix

package runner

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/subjects"
)

// metachars is text a shell would act on: it must reach the child as is.
const metachars = `$(touch pwned); rm -rf /tmp/x | ; ` + "`touch pwned2`" + ` && echo "$HOME" > pwned3 'q'`

// script is the absolute path of testdata/exec/<name>.
func script(t *testing.T, name string) string {
	t.Helper()
	p, err := filepath.Abs(filepath.Join("testdata", "exec", name))
	require.NoError(t, err)
	return p
}

// newExec builds an exec runner for role; a zero Dir becomes a temp dir.
func newExec(t *testing.T, role subjects.Role, cfg ExecConfig) *Exec {
	t.Helper()
	if cfg.Dir == "" {
		cfg.Dir = t.TempDir()
	}
	e, err := NewExec(role, cfg, nil)
	require.NoError(t, err)
	return e
}

func TestExecJSONOutput(t *testing.T) {
	t.Parallel()
	e := newExec(t, subjects.RoleJudge, ExecConfig{Argv: []string{script(t, "verdict.sh")}})
	req := simReq(t, subjects.RoleJudge, "")
	req.Plan, req.Change = json.RawMessage(`{"plan":"p"}`), json.RawMessage(`{"change":"c"}`)
	res, err := e.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, subjects.VerdictReject, res.Action)
	require.Equal(t, "no restart test\nlint fails", res.Reasoning)
	require.JSONEq(t, `{"verdict":"reject","feedback":"no restart test\nlint fails","reasons":["no restart test","lint fails"]}`, string(res.Output))
}

func TestExecStdinSchemaAndMetachars(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newExec(t, subjects.RoleImplementer, ExecConfig{Argv: []string{script(t, "cat.sh")}, Dir: dir})
	req := simReq(t, subjects.RoleImplementer, "")
	req.Task.Scope, req.Task.ID = metachars, "T1;rm"
	req.Attempt, req.Plan, req.Feedback = 2, json.RawMessage(`{"plan":"p","steps":["s"]}`), "add $(a test)"
	req.Lessons = []string{"run `go test` first"}
	res, err := e.Run(context.Background(), req)
	require.NoError(t, err)
	require.Equal(t, ActionChange, res.Action)

	var in ExecInput
	require.NoError(t, json.Unmarshal(res.Output, &in), "cat.sh answers with its stdin")
	require.Equal(t, ExecInputVersion, in.Version)
	require.Equal(t, subjects.RoleImplementer, in.Role)
	require.Equal(t, metachars, in.Task.Scope, "the scope arrives unharmed")
	require.Equal(t, "T1;rm", in.Task.ID)
	require.Equal(t, 2, in.Attempt)
	require.JSONEq(t, `{"plan":"p","steps":["s"]}`, string(in.Plan))
	require.Equal(t, "null", string(in.Change), "every key is present")
	require.Equal(t, "add $(a test)", in.Feedback)
	require.Equal(t, req.Lessons, in.Lessons)
	want, err := prompt.Defaults().Render(subjects.RoleImplementer, promptData(req))
	require.NoError(t, err)
	require.Equal(t, want, in.Prompt)
	require.Contains(t, in.Prompt, metachars)
	require.Contains(t, in.Prompt, "run ʼgo testʼ first", "lessons reach the prompt, quoted as data")
	requireNoPwned(t, dir)
}

func TestExecPlainTextAndArgs(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	e := newExec(t, subjects.RoleImplementer, ExecConfig{Argv: []string{script(t, "args.sh"), metachars, "two words", ""}, Dir: dir})
	res, err := e.Run(context.Background(), simReq(t, subjects.RoleImplementer, ""))
	require.NoError(t, err)
	require.Equal(t, ActionChange, res.Action)
	var out struct{ Change string }
	require.NoError(t, json.Unmarshal(res.Output, &out))
	require.Equal(t, metachars+"\ntwo words", out.Change, "each argument arrives as one, unexpanded")
	requireNoPwned(t, dir)
}

// requireNoPwned checks that no shell ran the metacharacters, in dir or in
// the test's working directory.
func requireNoPwned(t *testing.T, dir string) {
	t.Helper()
	for _, d := range []string{dir, "."} {
		for _, f := range []string{"pwned", "pwned2", "pwned3"} {
			require.NoFileExists(t, filepath.Join(d, f))
		}
	}
}

func TestExecNonZeroExit(t *testing.T) {
	t.Parallel()
	argv0 := script(t, "fail.sh")
	e := newExec(t, subjects.RolePlanner, ExecConfig{Argv: []string{argv0, "disk on fire"}})
	_, err := e.Run(context.Background(), simReq(t, subjects.RolePlanner, ""))
	require.EqualError(t, err, "exec "+argv0+": exit status 3: fatal: disk on fire")
	var exit *exec.ExitError
	require.ErrorAs(t, err, &exit)
	require.Equal(t, 3, exit.ExitCode())
	require.NotErrorIs(t, err, ErrPermanent, "a failed run is retried")
}

func TestExecStderrBounded(t *testing.T) {
	t.Parallel()
	e := newExec(t, subjects.RolePlanner, ExecConfig{Argv: []string{script(t, "noisy.sh")}, MaxStderrBytes: 64})
	_, err := e.Run(context.Background(), simReq(t, subjects.RolePlanner, ""))
	require.ErrorContains(t, err, "exit status 1: ...")
	require.True(t, strings.HasSuffix(err.Error(), "xxx\nthe last line"), err.Error())
	require.Less(t, len(err.Error()), 64+len(script(t, "noisy.sh"))+40)
}

func TestExecBadOutputIsRetried(t *testing.T) {
	t.Parallel()
	e := newExec(t, subjects.RoleJudge, ExecConfig{Argv: []string{script(t, "args.sh"), "APPROVE"}})
	_, err := e.Run(context.Background(), simReq(t, subjects.RoleJudge, ""))
	require.ErrorContains(t, err, "judge: output has no verdict of approve or reject")
	require.NotErrorIs(t, err, ErrPermanent)
}

func TestExecConfigProblemsArePermanent(t *testing.T) {
	t.Parallel()
	notExec := filepath.Join(t.TempDir(), "plain.sh")
	require.NoError(t, os.WriteFile(notExec, []byte("#!/bin/sh\n"), 0o600))
	for _, tc := range []struct {
		name string
		cfg  ExecConfig
		want string
	}{
		{"not in PATH", ExecConfig{Argv: []string{"drover-no-such-binary"}}, `"drover-no-such-binary" not found in the child's PATH`},
		{"PATH not inherited", ExecConfig{Argv: []string{"sh"}, Inherit: []string{}}, `"sh" not found`},
		{"missing path", ExecConfig{Argv: []string{"./nope.sh"}}, "nope.sh: no such file"},
		{"not executable", ExecConfig{Argv: []string{notExec}}, "is not executable"},
		{"a directory", ExecConfig{Argv: []string{"/"}}, "not a regular file"},
		{"missing dir", ExecConfig{Argv: []string{"sh"}, Dir: "/nonexistent/drover"}, "working directory"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := newExec(t, subjects.RolePlanner, tc.cfg)
			_, err := e.Run(context.Background(), simReq(t, subjects.RolePlanner, ""))
			require.ErrorIs(t, err, ErrPermanent)
			require.ErrorContains(t, err, "exec "+tc.cfg.Argv[0]+": ")
			require.ErrorContains(t, err, tc.want)
		})
	}
	e := newExec(t, subjects.RolePlanner, ExecConfig{Argv: []string{"sh"}})
	_, err := e.Run(context.Background(), simReq(t, subjects.RoleJudge, ""))
	require.ErrorIs(t, err, ErrPermanent, "a request for another role")
}

func TestExecRelativeArgvInDir(t *testing.T) {
	t.Parallel()
	e := newExec(t, subjects.RolePlanner, ExecConfig{Argv: []string{"./exec/args.sh", "a plan"}, Dir: "testdata"})
	res, err := e.Run(context.Background(), simReq(t, subjects.RolePlanner, ""))
	require.NoError(t, err)
	require.JSONEq(t, `{"plan":"a plan"}`, string(res.Output))
}

func TestNewExecValidation(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		role subjects.Role
		cfg  ExecConfig
		want string
	}{
		{"boss", ExecConfig{Argv: []string{"sh"}}, `unknown role "boss"`},
		{subjects.RoleJudge, ExecConfig{}, "exec runner for judge: argv: empty"},
		{subjects.RoleJudge, ExecConfig{Argv: []string{""}}, "argv: empty"},
		{subjects.RoleJudge, ExecConfig{Argv: []string{"sh", "a\x00b"}}, "argv[1]: contains a NUL"},
		{subjects.RoleJudge, ExecConfig{Argv: []string{"sh"}, MaxOutputBytes: -1}, "max_output_bytes: -1"},
		{subjects.RoleJudge, ExecConfig{Argv: []string{"sh"}, MaxStderrBytes: -2}, "max_stderr_bytes: -2"},
		{subjects.RoleJudge, ExecConfig{Argv: []string{"sh"}, Env: map[string]string{"A=B": "x"}}, `env: "A=B"`},
		{subjects.RoleJudge, ExecConfig{Argv: []string{"sh"}, Inherit: []string{""}}, `inherit: ""`},
		{subjects.RoleJudge, ExecConfig{Argv: []string{"sh"}, PromptEnv: "A=B"}, `prompt_env: "A=B"`},
	} {
		_, err := NewExec(tc.role, tc.cfg, nil)
		require.ErrorContains(t, err, tc.want)
	}
}

func TestExecIdentity(t *testing.T) {
	t.Parallel()
	base := ExecConfig{Argv: []string{"agent", "--fast"}, Dir: "/work", Env: map[string]string{"MODEL": "a", "B": "1"}}
	id := func(role subjects.Role, cfg ExecConfig, prompts *prompt.Set) string {
		e, err := NewExec(role, cfg, prompts)
		require.NoError(t, err)
		return e.Identity()
	}
	ref := id(subjects.RoleJudge, base, nil)
	require.True(t, strings.HasPrefix(ref, "exec/v1:"), ref)
	require.Equal(t, ref, id(subjects.RoleJudge, base, prompt.Defaults()), "stable")

	same := base
	same.MaxOutputBytes, same.MaxStderrBytes = 10, 10
	require.Equal(t, ref, id(subjects.RoleJudge, same, nil), "limits change no output")

	dir := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(dir, "judge.tmpl"), []byte("judge {{.Task.ID}}"), 0o600))
	custom, err := prompt.Load(dir)
	require.NoError(t, err)
	for name, cfg := range map[string]func(c *ExecConfig){
		"argv":        func(c *ExecConfig) { c.Argv = []string{"agent", "--slow"} },
		"dir":         func(c *ExecConfig) { c.Dir = "/other" },
		"env value":   func(c *ExecConfig) { c.Env = map[string]string{"MODEL": "b", "B": "1"} },
		"inherit":     func(c *ExecConfig) { c.Inherit = []string{"PATH"} },
		"prompt env":  func(c *ExecConfig) { c.PromptEnv = NoPromptEnv },
		"prompt file": func(c *ExecConfig) { c.PromptFile = true },
	} {
		c := base
		cfg(&c)
		require.NotEqual(t, ref, id(subjects.RoleJudge, c, nil), name)
	}
	require.NotEqual(t, ref, id(subjects.RoleJudge, base, custom), "template")
	require.NotEqual(t, ref, id(subjects.RolePlanner, base, nil), "role")
}

func TestTailWriter(t *testing.T) {
	t.Parallel()
	w := &tailWriter{max: 8}
	require.Empty(t, w.suffix())
	_, _ = w.Write([]byte("  abc "))
	require.Equal(t, ": abc", w.suffix())
	_, _ = w.Write([]byte("defghij"))
	require.Equal(t, ": ...defghij", w.suffix())
	_, _ = w.Write([]byte("abcé1234567"))
	require.Equal(t, ": ...1234567", w.suffix(), "cut at a rune start")
	_, _ = w.Write([]byte("ab"))
	require.Equal(t, ": ...234567ab", w.suffix())
	_, err := (&limitWriter{max: 1, over: func() {}}).Write([]byte("ab"))
	require.ErrorIs(t, err, errStdoutLimit)
}
