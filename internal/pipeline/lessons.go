package pipeline

import (
	"context"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Lessons records what rejections and failures taught, and recalls the
// recent ones of a task type for the planner.
type Lessons interface {
	// Record keeps a lesson; a failure is logged by the implementation and
	// never fails the task.
	Record(ctx context.Context, l subjects.Lesson)
	// Recent returns the most recent lessons of a type, formatted for a
	// prompt, newest last: those of the workflow, or of every workflow when
	// the implementation is configured fleet-wide.
	Recent(ctx context.Context, taskType, workflow string) []string
}

// plannerLessons returns the lessons for the planner's request, if its
// runner reads them: lessons are scoped to the task's workflow unless the
// implementation recalls them fleet-wide.
func (p *Pipeline) plannerLessons(ctx context.Context, t *taskRun) []string {
	if p.d.Lessons == nil {
		return nil
	}
	lr, ok := p.d.Runners.For(subjects.RolePlanner).(runner.LessonReader)
	if !ok || !lr.UsesLessons() {
		return nil
	}
	return p.d.Lessons.Recent(ctx, t.req.Type, t.req.Workflow)
}

// learn records a lesson after the commit that made it true.
func (p *Pipeline) learn(ctx context.Context, t *taskRun, role subjects.Role, attempt int, kind, what, feedback string, et subjects.EventType) {
	if p.d.Lessons == nil {
		return
	}
	p.d.Lessons.Record(ctx, subjects.Lesson{
		Type: t.req.Type, Role: role, Workflow: t.req.Workflow, Task: t.req.ID, Attempt: attempt,
		Kind: kind, What: what, Feedback: feedback, Time: p.cfg.Now().UTC(),
		EventID: subjects.EventID(t.req.Workflow, t.req.ID, attempt, subjects.ActorOf(role), et, 0),
	})
}
