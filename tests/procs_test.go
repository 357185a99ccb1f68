package tests

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// build is a drover binary built once per test run, with flags.
type build struct {
	flags []string
	once  sync.Once
	path  string
	err   error
}

var (
	// raceBuild is what the fault tests run as workers: with the race
	// detector and the failpoints tag, for serve's fault-drill flags.
	raceBuild = &build{flags: []string{"-race", "-tags", "failpoints"}}
	// plainBuild is the release build, without the race detector or
	// failpoints: for NATS nodes (whose code is not under test), for
	// throughput figures, and to check what a release binary offers.
	plainBuild = &build{}
)

func (b *build) get(t *testing.T) string {
	t.Helper()
	b.once.Do(func() {
		dir, err := os.MkdirTemp("", "drover-bin-")
		if err != nil {
			b.err = err
			return
		}
		b.path = filepath.Join(dir, "drover")
		args := append(append([]string{"build"}, b.flags...), "-o", b.path, "../cmd/drover")
		if out, err := exec.Command("go", args...).CombinedOutput(); err != nil {
			b.err = fmt.Errorf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
	})
	require.NoError(t, b.err)
	return b.path
}

// binary is the drover binary the fault tests run as child processes.
func binary(t *testing.T) string { return raceBuild.get(t) }

// plainBinary is the release drover binary: no race detector, no failpoints.
func plainBinary(t *testing.T) string { return plainBuild.get(t) }

// proc is a worker running as a child process.
type proc struct {
	t       *testing.T
	cmd     *exec.Cmd
	started chan struct{}
	done    chan struct{} // closed when the process has exited
	exitErr error         // its exit error, once done is closed
	mu      sync.Mutex
	logs    []map[string]any
	text    []string
}

// startProc runs `drover serve` against the bundle's server and waits until
// it logs "worker started".
func (b *bundle) startProc(args ...string) *proc {
	b.t.Helper()
	full := append([]string{"serve", "--nats-url", b.url, "--http", "", "--log-format", "json"}, args...)
	p := spawn(b.t, full...)
	p.waitStarted(60 * time.Second)
	return p
}

// spawn runs the drover binary with args, collecting its JSON log lines.
// The process is killed when the test ends. When the test failed, its
// text lines go to the test log, and with DROVER_TEST_LOGS set to a
// directory its JSON log lines go to a file there.
func spawn(t *testing.T, args ...string) *proc { return spawnBin(t, binary(t), args...) }

// spawnBin is spawn with a chosen binary.
func spawnBin(t *testing.T, bin string, args ...string) *proc {
	t.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = append(os.Environ(), "GORACE=halt_on_error=1")
	stderr, err := cmd.StderrPipe()
	require.NoError(t, err)
	cmd.Stdout = io.Discard
	p := &proc{t: t, cmd: cmd, started: make(chan struct{}), done: make(chan struct{})}
	require.NoError(t, cmd.Start())
	scanned := make(chan struct{})
	go func() {
		defer close(scanned)
		sc := bufio.NewScanner(stderr)
		sc.Buffer(make([]byte, 1<<16), 1<<20)
		once := sync.Once{}
		for sc.Scan() {
			var m map[string]any
			if json.Unmarshal(sc.Bytes(), &m) != nil {
				p.mu.Lock()
				p.text = append(p.text, sc.Text())
				p.mu.Unlock()
				continue
			}
			p.mu.Lock()
			p.logs = append(p.logs, m)
			p.mu.Unlock()
			if m["msg"] == "worker started" || m["msg"] == "nats server ready" {
				once.Do(func() { close(p.started) })
			}
		}
	}()
	go func() {
		<-scanned
		p.exitErr = cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGCONT)
		_ = cmd.Process.Kill()
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
		}
		if t.Failed() {
			p.mu.Lock()
			for _, l := range p.text {
				t.Logf("pid %d: %s", cmd.Process.Pid, l)
			}
			if dir := os.Getenv("DROVER_TEST_LOGS"); dir != "" {
				var all []string
				for _, m := range p.logs {
					b, _ := json.Marshal(m)
					all = append(all, string(b))
				}
				_ = os.WriteFile(filepath.Join(dir, fmt.Sprintf("%s-%d.log", strings.ReplaceAll(t.Name(), "/", "_"), cmd.Process.Pid)), []byte(strings.Join(all, "\n")), 0o644)
			}
			p.mu.Unlock()
		}
	})
	return p
}

// waitStarted waits for the process's ready log line.
func (p *proc) waitStarted(d time.Duration) {
	p.t.Helper()
	select {
	case <-p.started:
	case <-p.done:
		p.t.Fatalf("process exited at start: %v\n%s", p.exitErr, p.stderrText())
	case <-time.After(d):
		p.t.Fatal("process did not start")
	}
}

// logged reports whether the process logged a line with this msg.
func (p *proc) logged(msg string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, m := range p.logs {
		if m["msg"] == msg {
			return true
		}
	}
	return false
}

func (p *proc) stderrText() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	out = append(out, p.text...)
	for _, m := range p.logs {
		b, _ := json.Marshal(m)
		out = append(out, string(b))
	}
	return strings.Join(out, "\n")
}

// stopped reports whether the process is stopped (SIGSTOP).
func (p *proc) stopped() bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", p.cmd.Process.Pid))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(data), ')')
	return i > 0 && i+2 < len(data) && data[i+2] == 'T'
}

// rssBytes is the process's resident set size.
func (p *proc) rssBytes() int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.cmd.Process.Pid))
	require.NoError(p.t, err)
	for _, line := range strings.Split(string(data), "\n") {
		if strings.HasPrefix(line, "VmRSS:") {
			var kb int64
			_, err := fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(line, "VmRSS:")), "%d kB", &kb)
			require.NoError(p.t, err)
			return kb << 10
		}
	}
	p.t.Fatal("no VmRSS")
	return 0
}

func (p *proc) signal(sig syscall.Signal) { require.NoError(p.t, p.cmd.Process.Signal(sig)) }

// wait returns the process's exit error.
func (p *proc) wait(d time.Duration) error {
	select {
	case <-p.done:
		return p.exitErr
	case <-time.After(d):
		p.t.Fatalf("worker %d did not exit within %s", p.cmd.Process.Pid, d)
		return nil
	}
}

// calls reads a sim call log.
func calls(t *testing.T, path string) []runner.CallLogLine {
	t.Helper()
	out, err := readCalls(path)
	require.NoError(t, err)
	return out
}

// readCalls is calls without a test to fail, for Eventually callbacks.
func readCalls(path string) ([]runner.CallLogLine, error) {
	data, err := os.ReadFile(path)
	if os.IsNotExist(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	var out []runner.CallLogLine
	for _, line := range splitLines(data) {
		var c runner.CallLogLine
		if err := json.Unmarshal(line, &c); err != nil {
			return nil, fmt.Errorf("call log line %q: %w", line, err)
		}
		out = append(out, c)
	}
	return out, nil
}

func splitLines(b []byte) [][]byte {
	var out [][]byte
	sc := bufio.NewScanner(bytes.NewReader(b))
	for sc.Scan() {
		if len(sc.Bytes()) > 0 {
			out = append(out, append([]byte(nil), sc.Bytes()...))
		}
	}
	return out
}

// waitCall blocks until the call log holds a call of role for task.
func waitCall(t *testing.T, path, task string, role subjects.Role) {
	t.Helper()
	require.EventuallyWithT(t, func(ct *assert.CollectT) {
		cs, err := readCalls(path)
		if assert.NoError(ct, err) {
			assert.Positive(ct, countCalls(cs, task, role))
		}
	}, 60*time.Second, 20*time.Millisecond, "no %s call for %s", role, task)
}

func countCalls(cs []runner.CallLogLine, task string, role subjects.Role) int {
	n := 0
	for _, c := range cs {
		if c.Task == task && c.Role == role {
			n++
		}
	}
	return n
}
