package pipeline

import (
	"time"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// observeStart tells the metrics that a role's runner starts
// now: the gap since the previous runner of this delivery returned (none
// for its first runner, and none for a cache hit, which starts no runner),
// and, for the planner's first try on a first delivery, the time since the
// server stored the request. Both are what a user waits for on top of the
// runners' own time.
func (p *Pipeline) observeStart(t *taskRun, req runner.Request, now time.Time) {
	if !t.runnerEnded.IsZero() {
		p.d.Metrics.RoleGap(req.Role, now.Sub(t.runnerEnded))
	}
	if req.Role == subjects.RolePlanner && req.Try == 1 && t.d.NumDelivered == 1 && !t.d.Timestamp.IsZero() {
		p.d.Metrics.SubmitToStart(max(now.Sub(t.d.Timestamp), 0))
	}
}
