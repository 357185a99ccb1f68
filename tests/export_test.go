package tests

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// TestExportMillionEvents exports a large audit record with the release
// binary and reports its rate and the exporting process's peak RSS, which
// must not grow with the record. It writes DROVER_EXPORT_EVENTS events
// (e.g. 1000000) first; without the variable it is skipped (not for CI).
func TestExportMillionEvents(t *testing.T) {
	n, _ := strconv.Atoi(os.Getenv("DROVER_EXPORT_EVENTS"))
	if n <= 0 {
		t.Skip("set DROVER_EXPORT_EVENTS=1000000 to run")
	}
	b := setup(t)
	ctx := context.Background()
	_, err := broker.Provision(ctx, b.js, broker.Settings{Names: b.names}, natstest.Quiet())
	require.NoError(t, err)
	ajs, err := jetstream.New(b.nc, jetstream.WithPublishAsyncMaxPending(4096))
	require.NoError(t, err)
	start := time.Now()
	at := time.Now().UTC().Format(time.RFC3339Nano)
	for i := range n {
		wf, task := fmt.Sprintf("wf%d", i/10000), fmt.Sprintf("t%d", i%10000)
		body := fmt.Sprintf(`{"event_id":"%s/%s/1/system/task_completed/%d","event_type":"task_completed","workflow_id":%q,"task_id":%q,"actor":"system","attempt":1,"timestamp":%q,"action":"completed","reasoning":"","input":{},"output":{"change":"attempt 1 of %s","verdict":{"verdict":"approve"}},"status":"success","error":"","cached":false,"duration_ms":12,"worker":"w","metadata":{}}`,
			wf, task, i, wf, task, at, task)
		msg := &nats.Msg{Subject: b.names.AuditSubject(wf, task, subjects.ActorSystem, subjects.EventTaskCompleted), Header: nats.Header{}, Data: []byte(body)}
		msg.Header.Set(subjects.HeaderMsgID, strconv.Itoa(i))
		_, err := ajs.PublishMsgAsync(msg)
		require.NoError(t, err)
		if i%2048 == 2047 || i == n-1 { // a window at a time: never stalls
			select {
			case <-ajs.PublishAsyncComplete():
			case <-time.After(time.Minute):
				t.Fatal("publishing did not complete")
			}
		}
	}
	t.Logf("wrote %d events in %s", n, time.Since(start).Round(time.Millisecond))

	out, err := os.CreateTemp(t.TempDir(), "export-*.jsonl")
	require.NoError(t, err)
	cmd := exec.Command(plainBinary(t), "audit", "export", "--format", "cloudevents", "--nats-url", b.url, "--log-level", "error")
	cmd.Stdout = out
	start = time.Now()
	require.NoError(t, cmd.Start())
	// The peak RSS is the process's own high-water mark (VmHWM), read
	// while it runs: rusage's maxrss of a child counts the parent's
	// resident set at the fork.
	var peak atomic.Int64
	exited := make(chan struct{})
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for {
			if kb := vmHWM(cmd.Process.Pid); kb > peak.Load() {
				peak.Store(kb)
			}
			select {
			case <-exited:
				return
			case <-tick.C:
			}
		}
	}()
	werr := cmd.Wait()
	close(exited)
	require.NoError(t, werr)
	elapsed := time.Since(start)
	require.NoError(t, out.Close())
	rss := peak.Load() << 10
	f, err := os.Open(out.Name())
	require.NoError(t, err)
	defer func() { _ = f.Close() }() // read only
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
	}
	require.NoError(t, sc.Err())
	require.Equal(t, n, lines)
	t.Logf("exported %d events as CloudEvents in %s: %.0f events/s; peak RSS of the exporter %.1f MiB (sampled every 50ms)",
		n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), float64(rss)/(1<<20))
	require.Less(t, rss, int64(96<<20), "the export holds one event at a time")
}

// vmHWM is a process's peak resident set in KiB (0 once it is gone).
func vmHWM(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(data), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			return kb
		}
	}
	return 0
}
