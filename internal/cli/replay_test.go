package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/replay"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// drover replay re-runs a recorded workflow with no runner call and says
// so; a counterfactual needs a runner, and reports its verdicts.
func TestReplayCommand(t *testing.T) {
	t.Parallel()
	srv := natstest.Server(t, natstest.Sync(time.Minute))
	_, js := natstest.Connect(t, srv.ClientURL())
	names := subjects.MustNames(subjects.DefaultPrefix)
	wnc, err := nats.Connect(srv.ClientURL())
	require.NoError(t, err)
	t.Cleanup(wnc.Close)
	w, err := worker.New(wnc, worker.Config{Concurrency: 4, Log: natstest.Quiet(), FetchWait: time.Second})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- w.Run(ctx) }()
	t.Cleanup(func() { cancel(); _ = natstest.Recv(t, done, 30*time.Second) })
	natstest.Recv(t, w.Started(), 30*time.Second)
	reqs := []subjects.TaskRequest{
		{Workflow: "wf", ID: "a", Scope: "do a"},
		{Workflow: "wf", ID: "b", Scope: "do b", Metadata: map[string]json.RawMessage{"sim": json.RawMessage(`{"judge_rejects":1}`)}},
	}
	for _, r := range reqs {
		_, err := producer.Publish(ctx, js, names, subjects.DefaultQueue, r)
		require.NoError(t, err)
	}
	n := 0
	wctx, wcancel := context.WithTimeout(ctx, time.Minute)
	defer wcancel()
	require.NoError(t, producer.FollowTerminal(wctx, js, names, "wf", 0, func(producer.Terminal) bool { n++; return n < 2 }))

	code, out, errOut := runCLI(t, "replay", "wf", "--as", "wf-again", "--nats-url", srv.ClientURL())
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "matching the record: 2 of 2; runner calls: 0")
	require.Regexp(t, `b\s+completed@2\s+completed@2\s+same\s+same\s+same`, out)

	code, _, errOut = runCLI(t, "replay", "wf", "--role", "judge", "--nats-url", srv.ClientURL())
	require.Equal(t, 1, code)
	require.Contains(t, errOut, "--role needs the new runner")

	code, out, errOut = runCLI(t, "replay", "wf", "--as", "wf-cf", "--role", "judge", "--prompts", t.TempDir(), "--json", "--nats-url", srv.ClientURL())
	require.Equal(t, 0, code, errOut)
	var rep replay.Report
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, 3, rep.Summary.Compared) // a once, b twice
	require.InDelta(t, 1.0, rep.Summary.AgreementRate, 1e-9)
	require.EqualValues(t, 3, rep.LiveCalls)
}

// drover audit export writes every matching event once, as JSON lines or
// as CloudEvents, to stdout or a file.
func TestAuditExportCommand(t *testing.T) {
	t.Parallel()
	srv, _, js, _ := natstest.Provisioned(t, natstest.Sync(time.Minute))
	names := subjects.MustNames(subjects.DefaultPrefix)
	pub := audit.NewPublisher(js, names)
	ctx := context.Background()
	for i := range 5 {
		wf := "wf"
		if i == 4 {
			wf = "other"
		}
		ev := &subjects.AuditEvent{EventID: fmt.Sprintf("e%d", i), EventType: subjects.EventTaskAccepted, WorkflowID: wf, TaskID: fmt.Sprintf("t%d", i),
			Actor: subjects.ActorSystem, Attempt: 1, Timestamp: time.Now().UTC(), Status: subjects.StatusSuccess}
		_, err := pub.PublishEvent(ctx, ev, "", false, 0)
		require.NoError(t, err)
	}
	code, out, errOut := runCLI(t, "audit", "export", "--workflow", "wf", "--nats-url", srv.ClientURL())
	require.Equal(t, 0, code, errOut)
	lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
	require.Len(t, lines, 4)
	var ev subjects.AuditEvent
	require.NoError(t, json.Unmarshal([]byte(lines[3]), &ev))
	require.Equal(t, "e3", ev.EventID)
	require.Contains(t, errOut, "exported 4 events")

	file := filepath.Join(t.TempDir(), "ce.jsonl")
	code, _, errOut = runCLI(t, "audit", "export", "--format", "cloudevents", "-o", file, "--nats-url", srv.ClientURL())
	require.Equal(t, 0, code, errOut)
	data, err := os.ReadFile(file)
	require.NoError(t, err)
	lines = strings.Split(strings.TrimSuffix(string(data), "\n"), "\n")
	require.Len(t, lines, 5)
	var ce struct {
		SpecVersion, ID, Type, Source string
		Seq                           uint64 `json:"drover_seq"`
		Data                          subjects.AuditEvent
	}
	require.NoError(t, json.Unmarshal([]byte(lines[4]), &ce))
	require.Equal(t, "1.0", ce.SpecVersion)
	require.Equal(t, "e4", ce.ID)
	require.Equal(t, "dev.drover.task_accepted", ce.Type)
	require.Equal(t, "drover/drover", ce.Source)
	require.EqualValues(t, 5, ce.Seq)
	require.Equal(t, "other", ce.Data.WorkflowID)

	code, _, errOut = runCLI(t, "audit", "export", "--format", "xml", "--nats-url", srv.ClientURL())
	require.Equal(t, 1, code)
	require.Contains(t, errOut, `--format: format "xml"`)
}
