package audit

import (
	"context"
	"fmt"
	"strconv"
	"time"

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
	// at is the earlier of the event's stored time and its timestamp: its
	// DLQ entry was stored before the event, normally after the timestamp.
	at time.Time
}

// dlqEntry is what the checks need of one DLQ entry.
type dlqEntry struct {
	wf, task, reason string
	count            int
}

// dlqHorizonSlack widens the DLQ's horizon: for clock differences between
// this host and the server, and for the time between a DLQ entry and its
// event (an outbox replayed after a worker stopped).
const dlqHorizonSlack = time.Minute

// dlqHorizon is the time before which the DLQ may no longer hold an entry,
// from its configuration and state when it is read: now less its MaxAge,
// and, once it has removed entries (its first sequence is past 1, as after
// MaxMsgs, MaxBytes or MaxAge), the time of its oldest entry left (of its
// last one, when none is left), widened by dlqHorizonSlack. Zero means it
// holds every entry ever stored.
func dlqHorizon(cfg jetstream.StreamConfig, st jetstream.StreamState, now time.Time) time.Time {
	var h time.Time
	if cfg.MaxAge > 0 {
		h = now.Add(-cfg.MaxAge)
	}
	if st.FirstSeq > 1 {
		oldest := st.FirstTime
		if st.Msgs == 0 {
			oldest = st.LastTime
		}
		if oldest.After(h) {
			h = oldest
		}
	}
	if h.IsZero() {
		return h
	}
	return h.Add(dlqHorizonSlack)
}

// crossCheckDLQ reads the DLQ's headers and checks that each rejection has
// one entry with its request's sequence, workflow, task and reason, and
// each failure one entry with its workflow, task and reason. An event older
// than the DLQ's horizon whose entry is missing is counted in DLQAgedOut,
// not reported: the DLQ no longer holds what it could check against.
func (c *checker) crossCheckDLQ(ctx context.Context, js jetstream.JetStream, names subjects.Names) error {
	bySeq := map[uint64]*dlqEntry{}
	byTask := map[string]int{}
	horizon, err := readDLQHeaders(ctx, js, names.DLQStream(), time.Now, func(h dlqEntry, reqSeq uint64, ok bool) {
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
	c.rep.DLQHorizon = horizon
	agedOut := func(at time.Time) bool {
		if !horizon.IsZero() && at.Before(horizon) {
			c.rep.DLQAgedOut++
			return true
		}
		return false
	}
	for i := range c.rejects {
		r := &c.rejects[i]
		ev := &event{seq: r.seq, id: r.id, subject: r.subject}
		switch e := bySeq[r.reqSeq]; {
		case e == nil:
			if !agedOut(r.at) {
				c.violate(ev, RuleDLQMissing, "no DLQ entry has %s %d", subjects.HeaderStreamSeq, r.reqSeq)
			}
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
			if !agedOut(f.at) {
				c.violate(ev, RuleDLQMissing, "no DLQ entry for workflow %s, task %s with reason %q", f.wf, f.task, f.reason)
			}
		case n > 1:
			c.violate(ev, RuleDLQDuplicate, "%d DLQ entries for workflow %s, task %s with reason %q", n, f.wf, f.task, f.reason)
		}
	}
	return nil
}

// readDLQHeaders calls fn with the headers of every DLQ entry stored when it
// starts, read by an ordered consumer that delivers headers only (request
// bodies may be large), and returns the DLQ's horizon (dlqHorizon) at that
// moment. ok is false when Drover-Stream-Seq is unreadable.
func readDLQHeaders(ctx context.Context, js jetstream.JetStream, stream string, now func() time.Time, fn func(h dlqEntry, reqSeq uint64, ok bool)) (time.Time, error) {
	st, err := js.Stream(ctx, stream)
	if err != nil {
		return time.Time{}, fmt.Errorf("audit: verify: DLQ stream %s: %w", stream, err)
	}
	info := st.CachedInfo()
	horizon := dlqHorizon(info.Config, info.State, now())
	if info.State.Msgs == 0 {
		return horizon, nil
	}
	return horizon, readOrdered(ctx, js, stream, jetstream.OrderedConsumerConfig{HeadersOnly: true}, info.State.LastSeq, func(_ *jetstream.MsgMetadata, msg jetstream.Msg) {
		h := msg.Headers()
		reqSeq, err := strconv.ParseUint(h.Get(subjects.HeaderStreamSeq), 10, 64)
		fn(dlqEntry{wf: h.Get(subjects.HeaderWorkflow), task: h.Get(subjects.HeaderTask), reason: h.Get(subjects.HeaderReason)}, reqSeq, err == nil)
	})
}
