package pipeline

import (
	"maps"
	"time"

	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Ledger prices role results for their events (see package ledger).
type Ledger interface {
	// Cost is the cost of a role's result: of the call that ran for dur,
	// or, for a cache hit, what the hit saved.
	Cost(role subjects.Role, res runner.Result, dur time.Duration, cached bool) ledger.Cost
}

// eventMetadata is a role event's metadata: the runner's, with the cost
// under ledger.MetaKey when the pipeline has a ledger.
func (p *Pipeline) eventMetadata(rr roleResult) map[string]any {
	md := rr.res.Metadata
	if p.d.Ledger == nil {
		return md
	}
	md = maps.Clone(md)
	if md == nil {
		md = make(map[string]any, 1)
	}
	md[ledger.MetaKey] = p.d.Ledger.Cost(rr.role, rr.res, rr.dur, rr.cached)
	return md
}
