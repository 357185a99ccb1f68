package pipeline

import (
	"time"

	"github.com/droverhq/drover/subjects"
)

// Metrics receives the pipeline's events. The ops package implements it with
// Prometheus collectors; tests and benchmarks may count directly.
type Metrics interface {
	// RoleDone records one role: a cache hit (no runner call) or a runner
	// call with its duration and error.
	RoleDone(role subjects.Role, runner string, cached bool, d time.Duration, err error)
	// TaskDone counts a terminal event this worker committed.
	TaskDone(outcome subjects.EventType)
	// CachePutFailed counts a role result that could not be cached.
	CachePutFailed()
	// AuditPublished observes one fenced audit publish.
	AuditPublished(d time.Duration)
	// DLQWritten counts a DLQ entry this worker stored (a publish the
	// server took as a duplicate is not counted).
	DLQWritten(reason subjects.Reason)
	// RoleGap observes, as a role's runner starts, how long ago the
	// previous runner of the same delivery returned: the overhead between
	// two roles (see observe.go).
	RoleGap(role subjects.Role, gap time.Duration)
	// SubmitToStart observes, as the planner's runner starts on a task's
	// first delivery, how long ago the server stored the request.
	SubmitToStart(d time.Duration)
}

type nopMetrics struct{}

func (nopMetrics) RoleDone(subjects.Role, string, bool, time.Duration, error) {}
func (nopMetrics) TaskDone(subjects.EventType)                                {}
func (nopMetrics) CachePutFailed()                                            {}
func (nopMetrics) AuditPublished(time.Duration)                               {}
func (nopMetrics) DLQWritten(subjects.Reason)                                 {}
func (nopMetrics) RoleGap(subjects.Role, time.Duration)                       {}
func (nopMetrics) SubmitToStart(time.Duration)                                {}
