package pipeline

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// A role error that will be retried does not wait out its delay inside the
// consumer's ack-pending window (a delayed nak would hold one of its
// max-ack-pending slots, so a brownout with a backlog would starve good
// tasks). Once task_retried is committed, the worker schedules the request
// again for later (a message scheduled on the tasks stream, which the server
// publishes to the queue's subject when it is due) and acks this one.

// scheduleRetry stores, on the task's retry subject, the request scheduled
// to be published again on its queue's subject after delay. Its Nats-Msg-Id
// names the state revision that scheduled it, so a second publish of the
// same retry stores nothing; its Drover-Retry header carries that revision,
// which the claim matches against the state's. The request's own headers go
// with it, except those of the server and of an earlier retry.
func (p *Pipeline) scheduleRetry(ctx context.Context, t *taskRun, delay time.Duration) error {
	queue := t.d.Queue
	if queue == "" {
		queue = subjects.DefaultQueue
	}
	msg := &nats.Msg{
		Subject: p.d.Names.TaskRetrySubject(queue, t.req.Workflow, t.req.ID),
		Header:  nats.Header{},
		Data:    t.d.Body,
	}
	for k, v := range t.d.Header {
		if strings.HasPrefix(k, "Nats-") || k == subjects.HeaderRetry {
			continue
		}
		msg.Header[k] = v
	}
	rev := strconv.FormatUint(t.rev, 10)
	msg.Header.Set(subjects.HeaderMsgID, subjects.RetryMsgID(t.req.Workflow, t.req.ID, t.rev))
	msg.Header.Set(subjects.HeaderRetry, rev)
	// The server's clock decides when it is due: the wall clock, not the
	// pipeline's (an injected clock may be stepped).
	at := time.Now().Add(max(delay, 0))
	// WithScheduleAt would round the instant down to the second.
	msg.Header.Set(jetstream.ScheduleHeader, "@at "+at.UTC().Format(time.RFC3339Nano))
	msg.Header.Set(jetstream.ScheduleTargetHeader, p.d.Names.TaskSubject(queue))
	_, err := p.d.JS.PublishMsg(ctx, msg)
	if err != nil {
		return fmt.Errorf("schedule the retry of %s/%s: %w", t.req.Workflow, t.req.ID, err)
	}
	return nil
}
