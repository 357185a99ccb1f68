package subjects_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestEventTypeKinds(t *testing.T) {
	t.Parallel()
	tests := []struct {
		et              subjects.EventType
		valid, terminal bool
	}{
		{subjects.EventTaskCompleted, true, true},
		{subjects.EventTaskRejected, true, true},
		{subjects.EventWorkflowPaused, true, false},
		{subjects.EventTaskRedriven, true, false},
		{"task_exploded", false, false},
	}
	for _, tt := range tests {
		t.Run(string(tt.et), func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.valid, tt.et.Valid())
			assert.Equal(t, tt.terminal, tt.et.Terminal())
		})
	}
}

func TestRedrivenEventNames(t *testing.T) {
	t.Parallel()
	n, err := subjects.NewNames("drover")
	require.NoError(t, err)
	assert.Equal(t, "drover.audit.board-T1.T1=2E1.human.task_redriven",
		n.AuditSubject("board-T1", "T1.1", subjects.ActorHuman, subjects.EventTaskRedriven))
	assert.Equal(t, "board-T1/T1=2E1/0/human/task_redriven/12",
		subjects.EventID("board-T1", "T1.1", 0, subjects.ActorHuman, subjects.EventTaskRedriven, 12))
}

// BenchmarkEncodeEvent encodes a judge's verdict the size of a typical
// role's event, as every role result is encoded for the outbox.
func BenchmarkEncodeEvent(b *testing.B) {
	ev := subjects.AuditEvent{
		EventID: "wf/t1234/1/judge/judge_verdict", EventType: subjects.EventJudgeVerdict, WorkflowID: "wf", TaskID: "t1234",
		Actor: subjects.ActorOf(subjects.RoleJudge), Attempt: 1, Timestamp: time.Date(2026, 12, 1, 20, 0, 0, 123456789, time.UTC),
		Action: subjects.VerdictApprove, Reasoning: "the change does what the plan says, and the verification passes",
		Input:  json.RawMessage(`{"attempt":1,"cache_key":"judge.0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}`),
		Output: json.RawMessage(`{"verdict":"approve","feedback":"attempt 1 approved: go test ./... shown by change 5e4d3c2b1a0f","checks":[{"name":"verification","ok":true}]}`),
		Status: subjects.StatusSuccess, DurationMS: 3, Worker: "drover-1",
		Metadata: json.RawMessage(`{"runner":"exec","model":"m","tokens":{"input":1200,"output":300},"hash":"sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"}`),
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := subjects.EncodeEvent(&ev); err != nil {
			b.Fatal(err)
		}
	}
}
