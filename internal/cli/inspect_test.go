package cli

import (
	"bytes"
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/table"
	"github.com/droverhq/drover/subjects"
)

func TestParseAuditTime(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	for in, want := range map[string]time.Time{
		"":                          {},
		"1h":                        now.Add(-time.Hour),
		"90m":                       now.Add(-90 * time.Minute),
		"2026-11-30T10:00:00Z":      time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
		"2026-11-30T10:00:00.5Z":    time.Date(2026, 11, 30, 10, 0, 0, 5e8, time.UTC),
		"2026-11-30T11:00:00+01:00": time.Date(2026, 11, 30, 10, 0, 0, 0, time.UTC),
	} {
		got, err := parseAuditTime("--since", in, now)
		require.NoError(t, err, in)
		require.True(t, want.Equal(got), "%s: %s", in, got)
	}
	for _, in := range []string{"yesterday", "-1h", "2026-11-30"} {
		_, err := parseAuditTime("--until", in, now)
		require.ErrorContains(t, err, `--until "`+in+`"`)
	}
}

func TestAuditFlagsQuery(t *testing.T) {
	t.Parallel()
	now := time.Now()
	q, err := auditFlags{workflow: "w.1", task: "_", actor: "judge", eventType: "judge_verdict", since: "1h"}.query(now)
	require.NoError(t, err)
	require.Equal(t, "drover.audit.w=2E1._.judge.judge_verdict", q.Filter(subjects.MustNames("drover")))
	require.Equal(t, now.Add(-time.Hour), q.Since)
	q, err = auditFlags{actor: "human", eventType: "task_redriven"}.query(now)
	require.NoError(t, err)
	require.Equal(t, "drover.audit.*.*.human.task_redriven", q.Filter(subjects.MustNames("drover")))

	for f, want := range map[*auditFlags]string{
		{actor: "reviewer"}: `--actor "reviewer": want system, planner, implementer, judge or human`,
		{eventType: "done"}: `--type "done": want one of task_accepted,`,
		{summary: true}:     "--summary needs --workflow",
		{summary: true, workflow: "w", follow: true}:   "cannot be combined",
		{since: "1h", until: "2h"}:                     "is before --since",
		{task: "a b"}:                                  `--task "a b"`,
		{workflow: string(make([]byte, 129)) + "x"}:    "--workflow",
		{workflow: "w", summary: true, json: true}:     "cannot be combined",
		{workflow: "w", since: "2026-13-01T00:00:00Z"}: `--since "2026-13-01T00:00:00Z"`,
	} {
		_, err := f.query(now)
		require.ErrorContains(t, err, want)
	}
}

func TestResolveTaskRef(t *testing.T) {
	t.Parallel()
	r, err := resolveTaskRef([]string{"wf/T/1"}, "", "", "--id")
	require.NoError(t, err)
	require.Equal(t, taskRef{"wf", "T/1"}, r, "split at the first /")
	r, err = resolveTaskRef(nil, "a/b", "T", "--id")
	require.NoError(t, err)
	require.Equal(t, taskRef{"a/b", "T"}, r)

	for _, c := range []struct {
		args         []string
		workflow, id string
		want         string
	}{
		{[]string{"wf"}, "", "", "want WORKFLOW/TASK"},
		{[]string{"wf/T"}, "wf", "", "not both"},
		{nil, "wf", "", "name the task"},
		{[]string{"/T"}, "", "", `workflow ""`},
		{[]string{"wf/_"}, "", "", `task "_"`},
	} {
		_, err := resolveTaskRef(c.args, c.workflow, c.id, "--id")
		require.ErrorContains(t, err, c.want, c)
	}
}

func TestWriteTaskStateOmitsOutbox(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	st := subjects.TaskState{
		Workflow: "wf", Task: "T1", State: subjects.StateFailed, Stage: subjects.StageDone, Attempt: 2,
		Worker: "w-1", Reason: subjects.ReasonMaxAttempts, StartedAt: start, UpdatedAt: start.Add(1500 * time.Millisecond),
		Outputs: map[subjects.Role]string{subjects.RoleJudge: "judge.j", subjects.RolePlanner: "planner.p"},
		Result:  json.RawMessage(`{"verdict":"reject"}`),
		Outbox:  []subjects.OutboxItem{{Event: &subjects.OutboxEvent{ID: "secret-outbox"}}},
	}
	var buf bytes.Buffer
	require.NoError(t, writeTaskState(&buf, st, 9, start.Add(time.Hour)))
	out := buf.String()
	require.Regexp(t, `(?m)^state\s+failed$`, out)
	require.Regexp(t, `(?m)^reason\s+max_attempts$`, out)
	require.Regexp(t, `(?m)^took\s+1.5s$`, out)
	require.Regexp(t, `(?m)^revision\s+9$`, out)
	require.Regexp(t, `(?s)output planner.*output judge`, out, "roles in pipeline order")
	require.Contains(t, out, `"verdict": "reject"`)
	require.NotContains(t, out, "secret-outbox")
}

func TestByteSize(t *testing.T) {
	t.Parallel()
	require.Equal(t, "0 B", table.Bytes(0))
	require.Equal(t, "1023 B", table.Bytes(1023))
	require.Equal(t, "1.5 KiB", table.Bytes(1536))
	require.Equal(t, "2.0 MiB", table.Bytes(2<<20))
}
