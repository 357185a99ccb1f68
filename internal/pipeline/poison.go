package pipeline

import (
	"context"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/subjects"
)

// Poison ends a task whose handling panicked outside a runner on every
// delivery up to the last allowed one (the consumer's panic boundary calls
// it): the task fails with max_deliveries, one DLQ entry and task_failed,
// then Term. A body that does not decode is rejected as usual; a task
// already ended, or owned by a later delivery, is left as claim finds it.
func (p *Pipeline) Poison(ctx context.Context, d consumers.Msg, cause error) consumers.Outcome {
	req, rej := subjects.DecodeTask(d.Body, p.cfg.Limits)
	if rej != nil {
		return p.reject(ctx, d, rej)
	}
	t, out, ok := p.claim(ctx, d, req)
	if !ok {
		return out
	}
	out = p.fail(ctx, t, t.st.Attempt, subjects.ReasonMaxDeliveries,
		"handling the task panicked on its last allowed delivery: "+cause.Error(), nil, nil)
	if err := t.joinFlush(); err != nil && out.Action != consumers.Abandon {
		out = p.errOutcome(t, err)
	}
	return out
}
