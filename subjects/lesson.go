package subjects

import "time"

// Lesson is what a rejection or a failure taught: kept per task type on
// "<prefix>.lessons.<type token>" in the <PREFIX>_LESSONS stream, so that
// looking up one type's lessons reads only that type's subject. The
// planner's input includes the most recent lessons of the task's type.
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

// LessonsSubject is where one task type's lessons are kept.
func (n Names) LessonsSubject(taskType string) string {
	return n.prefix + ".lessons." + IDToken(taskType)
}

// LessonsWildcard matches every type's lessons.
func (n Names) LessonsWildcard() string { return n.prefix + ".lessons.*" }
