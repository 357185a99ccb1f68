package pipeline

import (
	"time"

	"github.com/droverhq/drover/subjects"
)

// Metrics receives the pipeline's events. The ops package implements it with
// Prometheus collectors; tests and benchmarks may count directly.
type Metrics interface {
	RoleDone(role subjects.Role, runner string, cached bool, d time.Duration, err error)
	TaskDone(outcome subjects.EventType)
	CachePutFailed()
	AuditPublished(d time.Duration)
}

type nopMetrics struct{}

func (nopMetrics) RoleDone(subjects.Role, string, bool, time.Duration, error) {}
func (nopMetrics) TaskDone(subjects.EventType)                                {}
func (nopMetrics) CachePutFailed()                                            {}
func (nopMetrics) AuditPublished(time.Duration)                               {}
