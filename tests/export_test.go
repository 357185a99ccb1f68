package tests

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"syscall"
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
	require.NoError(t, cmd.Run())
	elapsed := time.Since(start)
	require.NoError(t, out.Close())
	rss := cmd.ProcessState.SysUsage().(*syscall.Rusage).Maxrss << 10 // kB on Linux
	f, err := os.Open(out.Name())
	require.NoError(t, err)
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
	}
	require.NoError(t, sc.Err())
	require.Equal(t, n, lines)
	t.Logf("exported %d events as CloudEvents in %s: %.0f events/s; peak RSS of the exporter %.1f MiB",
		n, elapsed.Round(time.Millisecond), float64(n)/elapsed.Seconds(), float64(rss)/(1<<20))
	require.Less(t, rss, int64(256<<20), "the export holds one event at a time")
}
