package subjects

import "time"

// Lesson is what a rejection or a failure taught: kept per task type and
// workflow on "<prefix>.lessons.<type token>.<workflow token>" in the
// <PREFIX>_LESSONS stream, so that looking up one workflow's lessons of a
// type (or, fleet-wide, every workflow's) reads only those subjects. The
// planner's input includes the most recent lessons of the task's type.
// Lessons recorded before they were scoped are on the legacy subject
// "<prefix>.lessons.<type token>" and carry their workflow in the body.
type Lesson struct {
	Type     string    `json:"type"`
	Role     Role      `json:"role"`
	Workflow string    `json:"workflow"`
	Task     string    `json:"task"`
	Attempt  int       `json:"attempt"`
	Kind     string    `json:"kind"` // "rejected" (a judge's verdict) or a DLQ reason
	What     string    `json:"what"` // what went wrong, in a sentence
	Feedback string    `json:"feedback,omitempty"`
	EventID  string    `json:"event_id"`
	Time     time.Time `json:"time"`
}

// LessonsStream is the stream of lessons, "DROVER_LESSONS".
func (n Names) LessonsStream() string { return n.upper + "_LESSONS" }

// LessonsSubject is the legacy subject of one task type's lessons, on which
// lessons were recorded before they were scoped to their workflow. It is
// still read, never written.
func (n Names) LessonsSubject(taskType string) string {
	return n.prefix + ".lessons." + IDToken(taskType)
}

// LessonsWorkflowSubject is where one workflow's lessons of a task type are
// kept: "<prefix>.lessons.<type token>.<workflow token>".
func (n Names) LessonsWorkflowSubject(taskType, workflow string) string {
	return n.LessonsSubject(taskType) + "." + IDToken(workflow)
}

// LessonsTypeWildcard matches every workflow's lessons of one task type
// (not the legacy subject).
func (n Names) LessonsTypeWildcard(taskType string) string {
	return n.LessonsSubject(taskType) + ".*"
}

// LessonsWildcard matches every lesson, of both subject forms: the lessons
// stream's subject.
func (n Names) LessonsWildcard() string { return n.prefix + ".lessons.>" }
