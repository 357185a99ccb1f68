package cli

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/subjects"
)

// tableEvent is an audit event for the event table tests.
func tableEvent(task string, actor subjects.Actor, et subjects.EventType, at time.Time) subjects.AuditEvent {
	ev := subjects.AuditEvent{
		EventID: subjects.EventID("w", task, 1, actor, et, 0), EventType: et, WorkflowID: "w", TaskID: task,
		Actor: actor, Attempt: 1, Timestamp: at, Status: subjects.StatusSuccess, Worker: "test",
	}
	ev.Normalize()
	return ev
}

func TestEventTable(t *testing.T) {
	t0 := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	planned := tableEvent("T1", "planner", subjects.EventPlannerDecision, t0.Add(time.Second))
	planned.Cached = true
	failed := tableEvent("T2", subjects.ActorSystem, subjects.EventTaskFailed, t0.Add(11*time.Second+123*time.Millisecond).In(time.FixedZone("X", 3600)))
	failed.Error, failed.DurationMS, failed.Status, failed.Action = "runner crashed\nstack...", 1500, subjects.StatusFailure, "max_deliveries"
	var buf bytes.Buffer
	tab := newEventTable(&buf)
	tab.Add(audit.Record{Event: planned})
	tab.Add(audit.Record{Event: failed})
	tab.Add(audit.Record{Seq: 9, Subject: "drover.audit.x.y.system.task_accepted", Time: failed.Timestamp, Err: errors.New("bad body")})
	require.NoError(t, tab.Flush())

	lines := strings.Split(strings.TrimSuffix(buf.String(), "\n"), "\n")
	require.Len(t, lines, 4)
	require.True(t, strings.HasPrefix(lines[0], "TIME "))
	require.Equal(t, []string{"2026-11-30T12:00:11.123Z", "w", "T2", "system", "task_failed", "1", "failure", "-", "1.5s", "max_deliveries", "runner", "crashed"}, strings.Fields(lines[2]))
	require.Equal(t, []string{"2026-11-30T12:00:01.000Z", "w", "T1", "planner", "planner_decision", "1", "success", "yes", "-", "-", "-"}, strings.Fields(lines[1]))
	require.Contains(t, lines[3], "bad body")
	col := strings.Index(lines[0], "EVENT")
	require.Equal(t, col, strings.Index(lines[1], "planner_decision"), "aligned")
	require.Equal(t, col, strings.Index(lines[2], "task_failed"), "aligned")
}

func TestEventTableEscapesControls(t *testing.T) {
	ev := tableEvent("T1", subjects.ActorSystem, subjects.EventTaskFailed, time.Now())
	ev.Error, ev.Action = "boom \x1b]0;owned\x07 \u202eevil", "\x1b[2J"
	var buf bytes.Buffer
	tab := newEventTable(&buf)
	tab.Add(audit.Record{Event: ev})
	require.NoError(t, tab.Flush())
	out := buf.String()
	require.NotContains(t, out, "\x1b")
	require.NotContains(t, out, "\x07")
	require.NotContains(t, out, "\u202e")
	require.Contains(t, out, `\x1b[2J`)
	require.Contains(t, out, `\u202eevil`)
}

func TestShortError(t *testing.T) {
	require.Equal(t, "first", shortError("first\nsecond"))
	long := strings.Repeat("é", 100)
	require.Equal(t, strings.Repeat("é", 59)+"…", shortError(long))
}
