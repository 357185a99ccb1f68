package tests

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
)

// contractDoc is the wire contract, and cliExampleMarker the comment that
// marks its nats CLI example: the fenced block right after it.
const (
	contractDoc      = "../docs/contract.md"
	cliExampleMarker = "<!-- contract-cli-example -->"
	jsExampleDir     = "../examples/contract/js"
)

// TestContractDocCLIExample runs the nats CLI example of docs/contract.md,
// exactly as written there, against a real worker: a reader can submit a
// task, follow it to its terminal event and read its state from the
// contract alone.
func TestContractDocCLIExample(t *testing.T) {
	t.Parallel()
	nats := requireTool(t, "nats", "go install github.com/nats-io/natscli/nats@v0.5.0, and put $(go env GOPATH)/bin on PATH")
	doc, err := os.ReadFile(contractDoc)
	require.NoError(t, err)
	cmds, err := cliExample(string(doc))
	require.NoError(t, err)
	require.Len(t, cmds, 3, "the example publishes, follows and reads the state")

	b := setup(t)
	simWorker(b, runner.NewSim(runner.SimOptions{}), 4)
	env := toolEnv(t, b.url)
	var outs []string
	for _, argv := range cmds {
		require.Equal(t, "nats", argv[0], "the CLI example runs only nats commands: %q", argv)
		out := runTool(t, env, "", nats, argv[1:]...)
		outs = append(outs, out)
	}
	assert.Contains(t, outs[0], "Stored in Stream: DROVER_TASKS", "the publish got a PubAck")
	assert.Contains(t, outs[1], "subject: drover.audit.demo.T1.system.task_completed", "the follow printed the terminal event")
	assert.Contains(t, outs[1], `"event_type":"task_completed"`)
	assert.Contains(t, outs[2], `"state":"completed"`, "the state says completed")
	assert.Contains(t, outs[2], `"stage":"done"`)
}

// TestContractDocJSExample runs the Node.js example against a real worker
// and checks what it prints.
func TestContractDocJSExample(t *testing.T) {
	t.Parallel()
	node := requireTool(t, "node", "install Node.js 18 or later")
	if _, err := os.Stat(filepath.Join(jsExampleDir, "node_modules", "@nats-io", "jetstream")); err != nil {
		missing(t, "the example's packages are not installed: run npm install --no-audit --no-fund in examples/contract/js")
	}
	b := setup(t)
	simWorker(b, runner.NewSim(runner.SimOptions{}), 4)
	out := runTool(t, toolEnv(t, b.url), jsExampleDir, node, "submit.mjs", "demo-js", "T1.1", "Write a greeting")
	for _, want := range []string{
		"submitted demo-js/T1.1: DROVER_TASKS seq 1",
		"event task_accepted actor=system attempt=1",
		"event judge_verdict actor=judge attempt=1 status=success action=approve",
		"outcome: completed (task_completed, event demo-js/T1=2E1/1/system/task_completed)",
		`output: {"attempts":1,`,
	} {
		assert.Contains(t, out, want)
	}
}

// TestCLIExampleArgv checks how the CLI example's lines become argv.
func TestCLIExampleArgv(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		line string
		want []string
		err  bool
	}{
		{"plain", "nats kv get drover_state demo.T1", []string{"nats", "kv", "get", "drover_state", "demo.T1"}, false},
		{"single quotes keep everything", `nats sub 'a.$b.>' "x"`, []string{"nats", "sub", "a.$b.>", "x"}, false},
		{"json in single quotes", `nats pub s '{"id":"T1"}'`, []string{"nats", "pub", "s", `{"id":"T1"}`}, false},
		{"double quotes and escapes", `nats req s "say \"hi\"" ''`, []string{"nats", "req", "s", `say "hi"`, ""}, false},
		{"adjacent quoting joins", `nats -H 'A:'"b c"`, []string{"nats", "-H", "A:b c"}, false},
		{"runs of blanks", "nats\t a   b ", []string{"nats", "a", "b"}, false},
		{"unclosed quote", `nats pub 's`, nil, true},
		{"shell syntax is refused", "nats pub s x | tee y", nil, true},
		{"variables are refused", "nats pub $SUBJ x", nil, true},
		{"substitution is refused", "nats pub `x` y", nil, true},
	} {
		got, err := splitArgs(tc.line)
		if tc.err {
			require.Error(t, err, tc.name)
			continue
		}
		require.NoError(t, err, tc.name)
		assert.Equal(t, tc.want, got, tc.name)
	}
}

// cliExample returns the commands of the fenced block after the marker, one
// per non-blank line that is not a comment, split into argv.
func cliExample(doc string) ([][]string, error) {
	_, rest, ok := strings.Cut(doc, cliExampleMarker)
	if !ok {
		return nil, fmt.Errorf("no %s in %s", cliExampleMarker, contractDoc)
	}
	rest = strings.TrimLeft(rest, "\n")
	fence, body, ok := strings.Cut(rest, "\n")
	if !ok || !strings.HasPrefix(fence, "```") {
		return nil, fmt.Errorf("%s is not followed by a fenced block", cliExampleMarker)
	}
	body, _, ok = strings.Cut(body, "```")
	if !ok {
		return nil, errors.New("the CLI example's block is not closed")
	}
	var cmds [][]string
	for line := range strings.SplitSeq(body, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		argv, err := splitArgs(line)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", line, err)
		}
		cmds = append(cmds, argv)
	}
	return cmds, nil
}

// splitArgs splits a command line into argv as a POSIX shell would for the
// simple lines of the example: blanks separate words, single quotes keep
// everything literally, double quotes keep everything but \" and \\. No
// shell runs: anything a shell would expand or interpret outside single
// quotes ($, `, |, ;, &, <, >, unquoted \) is refused rather than guessed.
func splitArgs(line string) ([]string, error) {
	var (
		args    []string
		cur     strings.Builder
		inWord  bool
		quote   byte // 0, '\'' or '"'
		special = "$`|;&<>()\\*?[]{}~!"
	)
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote == '\'':
			if c == '\'' {
				quote = 0
			} else {
				cur.WriteByte(c)
			}
		case quote == '"':
			switch {
			case c == '"':
				quote = 0
			case c == '\\' && i+1 < len(line) && (line[i+1] == '"' || line[i+1] == '\\'):
				i++
				cur.WriteByte(line[i])
			case c == '$' || c == '`' || c == '\\':
				return nil, fmt.Errorf("%q inside double quotes would be expanded by a shell", c)
			default:
				cur.WriteByte(c)
			}
		case c == ' ' || c == '\t':
			if inWord {
				args = append(args, cur.String())
				cur.Reset()
				inWord = false
			}
		case c == '\'' || c == '"':
			quote, inWord = c, true
		case strings.IndexByte(special, c) >= 0:
			return nil, fmt.Errorf("unquoted %q is shell syntax", c)
		default:
			cur.WriteByte(c)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, fmt.Errorf("unclosed %c quote", quote)
	}
	if inWord {
		args = append(args, cur.String())
	}
	return args, nil
}

// requireTool returns the path of an external tool. A missing tool fails
// the test when the environment variable CI is set, so CI cannot pass by
// skipping it, and skips it otherwise, saying how to install it.
func requireTool(t *testing.T, name, install string) string {
	t.Helper()
	path, err := exec.LookPath(name)
	if err != nil {
		missing(t, fmt.Sprintf("%s not found on PATH: %s", name, install))
	}
	return path
}

// missing fails the test under CI and skips it elsewhere.
func missing(t *testing.T, msg string) {
	t.Helper()
	if os.Getenv("CI") != "" {
		t.Fatalf("%s (CI is set, so this test may not be skipped)", msg)
	}
	t.Skip(msg)
}

// toolEnv is the environment of an external client of the test server: its
// URL in NATS_URL, and a home of its own so that no natscli context or
// configuration of the machine's user applies.
func toolEnv(t *testing.T, url string) []string {
	home := t.TempDir()
	env := []string{"NATS_URL=" + url, "HOME=" + home, "XDG_CONFIG_HOME=" + filepath.Join(home, ".config"), "NO_COLOR=1"}
	for _, kv := range os.Environ() {
		name, _, _ := strings.Cut(kv, "=")
		switch {
		case name == "PATH", name == "TMPDIR", name == "LANG", strings.HasPrefix(name, "LC_"):
			env = append(env, kv)
		}
	}
	return env
}

// runTool runs an external command with a deadline and returns its
// combined output; the test fails if it errs or does not end in time.
func runTool(t *testing.T, env []string, dir, bin string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env, cmd.Dir, cmd.Stdin = env, dir, nil
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	err := cmd.Run()
	require.NoError(t, err, "%s %q (deadline: %v)\n%s", filepath.Base(bin), args, ctx.Err(), out.String())
	return out.String()
}
