package subjects_test

import (
	"testing"

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
