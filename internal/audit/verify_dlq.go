package audit

import (
	"context"
	"fmt"
	"strconv"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// dlqNeed is a task_failed or task_rejected event that needs a DLQ entry.
type dlqNeed struct {
	seq         uint64
	id, subject string
	wf, task    string // tokens
	reqSeq      uint64 // the rejected request's sequence (its /<n>)
	reason      string // the event's action
}

// dlqEntry is what the checks need of one DLQ entry.
type dlqEntry struct {
	wf, task, reason string
	count            int
}

// crossCheckDLQ reads the DLQ's headers and checks that each rejection has
// one entry with its request's sequence, workflow, task and reason, and
// each failure one entry with its workflow, task and reason.
func (c *checker) crossCheckDLQ(ctx context.Context, js jetstream.JetStream, names subjects.Names) error {
	bySeq := map[uint64]*dlqEntry{}
	byTask := map[string]int{}
	err := readDLQHeaders(ctx, js, names.DLQStream(), func(h dlqEntry, reqSeq uint64, ok bool) {
		c.rep.DLQEntries++
		byTask[h.wf+"."+h.task+"|"+h.reason]++
		if !ok {
			return
		}
		if e := bySeq[reqSeq]; e != nil {
			e.count++
			return
		}
		h.count = 1
		bySeq[reqSeq] = &h
	})
	if err != nil {
		return err
	}
	for i := range c.rejects {
		r := &c.rejects[i]
		ev := &event{seq: r.seq, id: r.id, subject: r.subject}
		switch e := bySeq[r.reqSeq]; {
		case e == nil:
			c.violate(ev, RuleDLQMissing, "no DLQ entry has %s %d", subjects.HeaderStreamSeq, r.reqSeq)
		case e.wf != r.wf || e.task != r.task || e.reason != r.reason:
			c.violate(ev, RuleDLQMismatch, "the DLQ entry of request %d names workflow %s, task %s, reason %q; the event names %s, %s, %q",
				r.reqSeq, e.wf, e.task, e.reason, r.wf, r.task, r.reason)
		case e.count > 1:
			c.violate(ev, RuleDLQDuplicate, "%d DLQ entries have %s %d", e.count, subjects.HeaderStreamSeq, r.reqSeq)
		}
	}
	for i := range c.failures {
		f := &c.failures[i]
		ev := &event{seq: f.seq, id: f.id, subject: f.subject}
		switch n := byTask[f.wf+"."+f.task+"|"+f.reason]; {
		case n == 0:
			c.violate(ev, RuleDLQMissing, "no DLQ entry for workflow %s, task %s with reason %q", f.wf, f.task, f.reason)
		case n > 1:
			c.violate(ev, RuleDLQDuplicate, "%d DLQ entries for workflow %s, task %s with reason %q", n, f.wf, f.task, f.reason)
		}
	}
	return nil
}

// readDLQHeaders calls fn with the headers of every DLQ entry stored when it
// starts, read by an ordered consumer that delivers headers only (request
// bodies may be large). ok is false when Drover-Stream-Seq is unreadable.
func readDLQHeaders(ctx context.Context, js jetstream.JetStream, stream string, fn func(h dlqEntry, reqSeq uint64, ok bool)) error {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return fmt.Errorf("audit: verify: DLQ stream %s: %w", stream, err)
	}
	state := st.CachedInfo().State
	if state.Msgs == 0 {
		return nil
	}
	return readOrdered(ctx, js, stream, jetstream.OrderedConsumerConfig{HeadersOnly: true}, state.LastSeq, func(_ uint64, msg jetstream.Msg) {
		h := msg.Headers()
		reqSeq, err := strconv.ParseUint(h.Get(subjects.HeaderStreamSeq), 10, 64)
		fn(dlqEntry{wf: h.Get(subjects.HeaderWorkflow), task: h.Get(subjects.HeaderTask), reason: h.Get(subjects.HeaderReason)}, reqSeq, err == nil)
	})
}
