package pipeline

import (
	"log/slog"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/subjects"
)

// taskLogger returns log with the attributes every line about a task carries:
// workflow, task, role (omitted when empty) and attempt (the
// implementer+judge round; 0 before the task's state is known).
func taskLogger(log *slog.Logger, workflow, task string, role subjects.Role, attempt int) *slog.Logger {
	args := make([]any, 0, 8)
	args = append(args, "workflow", workflow, "task", task)
	if role != "" {
		args = append(args, "role", string(role))
	}
	return log.With(append(args, "attempt", attempt)...)
}

// taskLog is the logger of a line about t, with its delivery. role names
// the role the line is about; empty means the role the task is at (none
// once it is done).
func (p *Pipeline) taskLog(t *taskRun, role subjects.Role) *slog.Logger {
	if role == "" {
		if r := subjects.Role(t.st.Stage); r.Valid() {
			role = r
		}
	}
	return withMsg(taskLogger(p.d.Log, t.req.Workflow, t.req.ID, role, t.st.Attempt), t.d)
}

// requestLog is the logger of a line about a delivery before its task's
// state is known: the attempt is 0.
func (p *Pipeline) requestLog(d consumers.Msg, workflow, task string) *slog.Logger {
	return withMsg(taskLogger(p.d.Log, workflow, task, "", 0), d)
}

func withMsg(log *slog.Logger, d consumers.Msg) *slog.Logger {
	return log.With("queue", d.Queue, "stream_seq", d.StreamSeq, "delivery", d.NumDelivered)
}
