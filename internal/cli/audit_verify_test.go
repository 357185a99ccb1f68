package cli

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

func TestWriteVerifyReport(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	rep := audit.VerifyReport{Events: 1_000_000, Tasks: 200_000, Completed: 199_000, Failed: 500, Open: 500,
		OpenTasks: []string{"w/T1", "w/T2"}, Rejected: 12, SeqChecked: true, DLQChecked: true, DLQEntries: 512,
		Duration: 4100 * time.Millisecond, EventsPerSec: 243_902, Violations: []audit.Violation{}}
	require.NoError(t, writeVerifyReport(&buf, rep))
	out := buf.String()
	require.Contains(t, out, "verified 1,000,000 events of 200,000 tasks in 4.1s (244k events/s): OK\n")
	require.Contains(t, out, "tasks: 199,000 completed, 500 failed, 0 cancelled, 500 open; 12 rejected requests; 0 workflow events\n")
	require.Contains(t, out, "open (no terminal event yet): w/T1 w/T2 and 498 more\n")
	require.Contains(t, out, "DLQ: 512 entries cross-checked\n")
	require.NotContains(t, out, "violation")
	require.NotContains(t, out, "aged out")

	rep.DLQAgedOut, rep.DLQHorizon = 3, time.Date(2026, 11, 1, 12, 0, 0, 0, time.UTC)
	buf.Reset()
	require.NoError(t, writeVerifyReport(&buf, rep))
	require.Contains(t, buf.String(), "DLQ: 3 failed or rejected requests older than the DLQ holds (before 2026-11-01T12:00:00Z): aged out, not checked\n")

	v := audit.Violation{Seq: 7, EventID: "w/T1/1/judge/judge_verdict", Rule: audit.RuleOrder, Detail: "judge_verdict of round 1 before the implementer_change of round 1"}
	rep = audit.VerifyReport{Workflow: "w", Events: 9, Tasks: 1, Duration: 35 * time.Millisecond, EventsPerSec: 257,
		ViolationCount: 3, Violations: []audit.Violation{v, v}, First: &v}
	buf.Reset()
	require.NoError(t, writeVerifyReport(&buf, rep))
	out = buf.String()
	require.Contains(t, out, "verified 9 events of 1 tasks of workflow w in 35ms (257 events/s): 3 violations\n")
	require.Contains(t, out, "sequence gaps: not checked")
	require.Contains(t, out, "DLQ: not checked\n")
	require.Contains(t, out, "first violation: seq 7 w/T1/1/judge/judge_verdict: order: judge_verdict of round 1 before")
	require.Contains(t, out, "  ... and 1 more\n")

	require.Equal(t, "999", vfDigits(999))
	require.Equal(t, "1,234,567", vfDigits(1234567))
	require.Equal(t, "1.2M", vfRate(1_234_567))
}

// TestAuditVerifyCmd runs the command against an embedded server: a clean
// stream exits 0, a broken one exits 1 and names the violation.
func TestAuditVerifyCmd(t *testing.T) {
	t.Parallel()
	srv, _, js, _ := natstest.Provisioned(t, natstest.Sync(time.Second))
	names := subjects.MustNames(subjects.DefaultPrefix)
	ctx := context.Background()

	run := func(args ...string) (string, error) {
		var out bytes.Buffer
		g := &globals{natsURL: srv.ClientURL(), names: names, stdout: &out, stderr: io.Discard}
		cmd := newAuditVerifyCmd(g)
		cmd.SetArgs(args)
		cmd.SetOut(io.Discard)
		cmd.SetErr(io.Discard)
		err := cmd.ExecuteContext(ctx)
		return out.String(), err
	}
	out, err := run()
	require.NoError(t, err)
	require.Contains(t, out, "verified 0 events of 0 tasks in ")
	require.Contains(t, out, "): OK\n")

	ev := subjects.AuditEvent{EventID: subjects.EventID("w", "T1", 1, "planner", subjects.EventPlannerDecision, 0),
		EventType: subjects.EventPlannerDecision, WorkflowID: "w", TaskID: "T1", Actor: "planner", Attempt: 1}
	oe, err := subjects.EncodeEvent(&ev)
	require.NoError(t, err)
	_, err = js.PublishMsg(ctx, audit.NewPublisher(js, names).Msg(oe, ""))
	require.NoError(t, err)

	out, err = run("--workflow", "w")
	require.Equal(t, exitCode(1), err)
	require.Contains(t, out, "1 violation\n")
	require.Contains(t, out, "first violation: seq 1 w/T1/1/planner/planner_decision: order: planner_decision is the task's first event")

	out, err = run("--json")
	require.Equal(t, exitCode(1), err)
	var rep audit.VerifyReport
	require.NoError(t, json.Unmarshal([]byte(out), &rep))
	require.Equal(t, 1, rep.ViolationCount)
	require.Equal(t, audit.RuleOrder, rep.First.Rule)
	require.True(t, rep.DLQChecked)

	_, err = run("--workflow", "a b")
	require.ErrorContains(t, err, `--workflow "a b"`)
}

// drover audit checkpoint writes a file that verify --checkpoint compares:
// clean on the stream it was taken of, a regression once the stream is
// replaced by one that ends before it.
func TestAuditCheckpointCmd(t *testing.T) {
	t.Parallel()
	names := subjects.MustNames(subjects.DefaultPrefix)
	ctx := context.Background()
	run := func(url string, cmd func(*globals) *cobra.Command, args ...string) (string, error) {
		var out bytes.Buffer
		g := &globals{natsURL: url, names: names, stdout: &out, stderr: io.Discard}
		c := cmd(g)
		c.SetArgs(args)
		c.SetOut(io.Discard)
		c.SetErr(io.Discard)
		err := c.ExecuteContext(ctx)
		return out.String(), err
	}
	publish := func(js jetstream.JetStream, n int) {
		pub := audit.NewPublisher(js, names)
		for i := range n {
			ev := subjects.AuditEvent{EventID: subjects.EventID("w", fmt.Sprintf("T%d", i), 1, subjects.ActorSystem, subjects.EventTaskAccepted, 0),
				EventType: subjects.EventTaskAccepted, WorkflowID: "w", TaskID: fmt.Sprintf("T%d", i), Actor: subjects.ActorSystem, Attempt: 1}
			_, err := pub.PublishEvent(ctx, &ev, "", true, 0)
			require.NoError(t, err)
		}
	}
	srv, _, js, _ := natstest.Provisioned(t, natstest.Sync(time.Second))
	publish(js, 3)
	file := filepath.Join(t.TempDir(), "cp.json")
	_, err := run(srv.ClientURL(), newAuditCheckpointCmd, "--out", file)
	require.NoError(t, err)
	out, err := run(srv.ClientURL(), newAuditVerifyCmd, "--checkpoint", file, "--dlq=false")
	require.NoError(t, err, out)
	require.Contains(t, out, "checkpoint: compared at sequence 3\n")

	older, _, ojs, _ := natstest.Provisioned(t, natstest.Sync(time.Second))
	publish(ojs, 2)
	out, err = run(older.ClientURL(), newAuditVerifyCmd, "--checkpoint", file, "--dlq=false")
	require.Equal(t, exitCode(1), err)
	require.Contains(t, out, "regression: the stream ends at sequence 2, before the checkpoint's 3")

	require.NoError(t, os.WriteFile(file, []byte(`{"last_seq": 3, "link": "x"}`), 0o600))
	_, err = run(srv.ClientURL(), newAuditVerifyCmd, "--checkpoint", file)
	require.ErrorContains(t, err, "link is not a hex SHA-256")
}
