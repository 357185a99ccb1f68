package subjects_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestNamesDefaultPrefix(t *testing.T) {
	t.Parallel()
	n, err := subjects.NewNames(subjects.DefaultPrefix)
	require.NoError(t, err)

	for _, tc := range []struct{ got, want string }{
		{n.Prefix(), "drover"},
		{n.TasksStream(), "DROVER_TASKS"},
		{n.AuditStream(), "DROVER_AUDIT"},
		{n.DLQStream(), "DROVER_DLQ"},
		{n.StateBucket(), "drover_state"},
		{n.CacheBucket(), "drover_cache"},
		{n.BlobStore(), "drover_blobs"},
		{n.Consumer("default"), "drover-default"},
		{n.TaskSubject("default"), "drover.tasks.default"},
		{n.TasksWildcard(), "drover.tasks.*"},
		{n.DLQSubject("default"), "drover.dlq.default"},
		{n.DLQWildcard(), "drover.dlq.*"},
		{n.AuditWildcard(), "drover.audit.>"},
		{
			n.AuditSubject("board-T1", "T1.1", subjects.ActorOf(subjects.RoleJudge), subjects.EventJudgeVerdict),
			"drover.audit.board-T1.T1=2E1.judge.judge_verdict",
		},
		{
			n.AuditSubject("board-T1", subjects.Reserved, subjects.ActorSystem, subjects.EventWorkflowPaused),
			"drover.audit.board-T1._.system.workflow_paused",
		},
		{
			n.AuditSubject("", "", subjects.ActorSystem, subjects.EventTaskRejected),
			"drover.audit._._.system.task_rejected",
		},
		{n.AuditTaskFilter("board-T1", "T1.1"), "drover.audit.board-T1.T1=2E1.>"},
		{n.AuditTaskFilter("a.b", "c*d"), "drover.audit.a=2Eb.c=2Ad.>"},
		{n.CtlSubject("board-T1", "pause"), "drover.ctl.workflow.board-T1.pause"},
		{n.CtlSubject("w.1", "cancel"), "drover.ctl.workflow.w=2E1.cancel"},
		{n.CtlWildcard(), "drover.ctl.workflow.*.*"},
	} {
		assert.Equal(t, tc.want, tc.got)
	}
}

func TestNamesCustomPrefix(t *testing.T) {
	t.Parallel()
	n, err := subjects.NewNames("team-a_2")
	require.NoError(t, err)

	for _, tc := range []struct{ got, want string }{
		{n.Prefix(), "team-a_2"},
		{n.TasksStream(), "TEAM-A_2_TASKS"},
		{n.AuditStream(), "TEAM-A_2_AUDIT"},
		{n.DLQStream(), "TEAM-A_2_DLQ"},
		{n.StateBucket(), "team-a_2_state"},
		{n.CacheBucket(), "team-a_2_cache"},
		{n.BlobStore(), "team-a_2_blobs"},
		{n.Consumer("gpu"), "team-a_2-gpu"},
		{n.TaskSubject("gpu"), "team-a_2.tasks.gpu"},
		{n.TasksWildcard(), "team-a_2.tasks.*"},
		{n.DLQSubject("gpu"), "team-a_2.dlq.gpu"},
		{n.DLQWildcard(), "team-a_2.dlq.*"},
		{n.AuditWildcard(), "team-a_2.audit.>"},
		{
			n.AuditSubject("wf", "t", subjects.ActorSystem, subjects.EventTaskCompleted),
			"team-a_2.audit.wf.t.system.task_completed",
		},
		{n.AuditTaskFilter("wf", "t"), "team-a_2.audit.wf.t.>"},
		{n.AuditFilter("wf", "", "", ""), "team-a_2.audit.wf.>"},
		{n.CtlSubject("wf", "resume"), "team-a_2.ctl.workflow.wf.resume"},
		{n.CtlWildcard(), "team-a_2.ctl.workflow.*.*"},
	} {
		assert.Equal(t, tc.want, tc.got)
	}
}

func TestAuditFilter(t *testing.T) {
	t.Parallel()
	n := subjects.MustNames(subjects.DefaultPrefix)
	judge := subjects.ActorOf(subjects.RoleJudge)

	for _, tc := range []struct {
		name     string
		workflow string
		task     string
		actor    subjects.Actor
		et       subjects.EventType
		want     string
	}{
		{"none", "", "", "", "", "drover.audit.>"},
		{"workflow only", "board-T1", "", "", "", "drover.audit.board-T1.>"},
		{"workflow escaped", "a.b", "", "", "", "drover.audit.a=2Eb.>"},
		{"task only", "", "T1.1", "", "", "drover.audit.*.T1=2E1.>"},
		{"actor only", "", "", judge, "", "drover.audit.*.*.judge.>"},
		{"type only", "", "", "", subjects.EventTaskFailed, "drover.audit.*.*.*.task_failed"},
		{"workflow and task", "board-T1", "T1.1", "", "", "drover.audit.board-T1.T1=2E1.>"},
		{"task and system actor", "board-T1", "T1.1", subjects.ActorSystem, "", "drover.audit.board-T1.T1=2E1.system.>"},
		{"workflow and type", "board-T1", "", "", subjects.EventJudgeVerdict, "drover.audit.board-T1.*.*.judge_verdict"},
		{"actor and type", "", "", judge, subjects.EventJudgeVerdict, "drover.audit.*.*.judge.judge_verdict"},
		{"workflow level events", "board-T1", subjects.Reserved, "", "", "drover.audit.board-T1._.>"},
		{
			"everything", "board-T1", "T1.1", judge, subjects.EventJudgeVerdict,
			"drover.audit.board-T1.T1=2E1.judge.judge_verdict",
		},
	} {
		got := n.AuditFilter(tc.workflow, tc.task, tc.actor, tc.et)
		assert.Equal(t, tc.want, got, tc.name)
	}
}

// A filter that names everything is exactly the subject it matches, and
// an ID can never add a subject level or a wildcard to it.
func TestAuditSubjectLevels(t *testing.T) {
	t.Parallel()
	n := subjects.MustNames(subjects.DefaultPrefix)
	for _, id := range []string{"a.b", "*", ">", "a b", "a.>", "x\x00y", "\xff"} {
		subj := n.AuditSubject(id, id, subjects.ActorSystem, subjects.EventTaskAccepted)
		levels := strings.Split(subj, ".")
		require.Len(t, levels, 6, subj)
		assert.Equal(t, subjects.Token(id), levels[2], subj)
		assert.Equal(t, subjects.Token(id), levels[3], subj)
		assert.NotContains(t, strings.Join(levels[2:4], ""), "*", subj)
		assert.NotContains(t, strings.Join(levels[2:4], ""), ">", subj)
		assert.Equal(t, subj, n.AuditFilter(id, id, subjects.ActorSystem, subjects.EventTaskAccepted))
	}
}

func TestEventID(t *testing.T) {
	t.Parallel()
	judge := subjects.ActorOf(subjects.RoleJudge)
	for _, tc := range []struct {
		name     string
		workflow string
		task     string
		attempt  int
		actor    subjects.Actor
		et       subjects.EventType
		n        uint64
		want     string
	}{
		{
			"contract example", "board-T1", "T1.1", 1, judge, subjects.EventJudgeVerdict, 0,
			"board-T1/T1=2E1/1/judge/judge_verdict",
		},
		{
			"retried with delivery count", "board-T1", "T1.1", 2, subjects.ActorOf(subjects.RoleImplementer),
			subjects.EventTaskRetried, 3, "board-T1/T1=2E1/2/implementer/task_retried/3",
		},
		{
			"rejected with stream seq", "w", "t", 0, subjects.ActorSystem, subjects.EventTaskRejected, 42,
			"w/t/0/system/task_rejected/42",
		},
		{
			"rejected unreadable", "", "", 0, subjects.ActorSystem, subjects.EventTaskRejected, 7,
			"_/_/0/system/task_rejected/7",
		},
		{
			"workflow paused", "a/b", subjects.Reserved, 0, subjects.ActorSystem, subjects.EventWorkflowPaused, 18446744073709551615,
			"a=2Fb/_/0/system/workflow_paused/18446744073709551615",
		},
		{
			"slash in IDs cannot forge a level", "a/1", "b/2", 1, subjects.ActorSystem, subjects.EventTaskAccepted, 0,
			"a=2F1/b=2F2/1/system/task_accepted",
		},
	} {
		got := subjects.EventID(tc.workflow, tc.task, tc.attempt, tc.actor, tc.et, tc.n)
		assert.Equal(t, tc.want, got, tc.name)
	}
}

func TestMsgIDs(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "board-T1/T1=2E1", subjects.TaskMsgID("board-T1", "T1.1"))
	assert.Equal(t, "board-T1/T1=2E1/resume/12", subjects.ResumeMsgID("board-T1", "T1.1", 12))
	assert.Equal(t, "dlq/default/1234", subjects.DLQMsgID("default", 1234))
}

func TestKeys(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "board-T1.T1=2E1", subjects.StateKey("board-T1", "T1.1"))
	assert.Equal(t, "a=2Fb.c=2Ad", subjects.StateKey("a/b", "c*d"))
	assert.Equal(t, "a=20b.=3E", subjects.StateKey("a b", ">"))
	assert.Equal(t, "board-T1._", subjects.WorkflowKey("board-T1"))
	assert.Equal(t, "w=2E1._", subjects.WorkflowKey("w.1"))
	// A task's key and its workflow's key never collide, since "_" is no task ID.
	assert.NotEqual(t, subjects.WorkflowKey("w"), subjects.StateKey("w", "=5F"))

	sum := strings.Repeat("ab", 32)
	assert.Equal(t, "planner."+sum, subjects.CacheKey(subjects.RolePlanner, sum))
	assert.Equal(t, "judge."+sum, subjects.CacheKey(subjects.RoleJudge, sum))
}

func TestNewNamesInvalid(t *testing.T) {
	t.Parallel()
	for _, p := range []string{
		"",
		"Drover",
		"DROVER",
		"1drover",
		"-drover",
		"_drover",
		"dro.ver",
		"dro ver",
		"dro*",
		"dro>",
		"drovér",
		"dro\x00",
		strings.Repeat("d", 33),
	} {
		_, err := subjects.NewNames(p)
		require.ErrorIs(t, err, subjects.ErrInvalidPrefix, "prefix %q", p)
		assert.Panics(t, func() { subjects.MustNames(p) }, "prefix %q", p)
	}
	for _, p := range []string{"d", "drover", "d-1_x", strings.Repeat("d", 32)} {
		_, err := subjects.NewNames(p)
		require.NoError(t, err, "prefix %q", p)
	}
}

func TestLiveNames(t *testing.T) {
	t.Parallel()
	n := subjects.MustNames("drover")
	require.Equal(t, "DROVER_LIVE", n.LiveStream())
	require.Equal(t, "drover.live.board-T1.T1=2E1", n.LiveSubject("board-T1", "T1.1"))
	require.Equal(t, "drover.live._._", n.LiveSubject("", ""))
	require.Equal(t, "drover.live.*.*", n.LiveWildcard())
}
