package audit

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/streamread"
	"github.com/droverhq/drover/subjects"
)

// Rules a Violation can name. They are stable: scripts may match them.
const (
	// RuleMissingSeq: a stream sequence is missing. The audit stream denies
	// deletes, so any gap means an event was removed.
	RuleMissingSeq = "missing-sequence"
	// RuleSubject: the subject is not an audit subject of the contract
	// (token count, actor, event type, or a task event on task "_").
	RuleSubject = "subject"
	// RuleEventID: the Nats-Msg-Id is missing or is not the event ID the
	// subject implies (<wf>/<task>/<attempt>/<actor>/<event_type>[/<n>]).
	RuleEventID = "event-id"
	// RuleEventIDBody: the body's event_id differs from the Nats-Msg-Id.
	RuleEventIDBody = "event-id-body"
	// RuleBody: a body that had to be read is not an audit event.
	RuleBody = "body"
	// RuleDuplicateID: an event ID appears twice.
	RuleDuplicateID = "duplicate-event-id"
	// RuleOrder: a task's events are out of the pipeline's order.
	RuleOrder = "order"
	// RuleTerminalTwice: a second task_completed, task_failed or
	// task_cancelled for one task.
	RuleTerminalTwice = "terminal-twice"
	// RuleAfterTerminal: a task event after the task's terminal event.
	RuleAfterTerminal = "after-terminal"
	// RuleDLQMissing: a task_failed or task_rejected without its DLQ entry.
	RuleDLQMissing = "dlq-missing"
	// RuleDLQDuplicate: more than one DLQ entry for one request.
	RuleDLQDuplicate = "dlq-duplicate"
	// RuleDLQMismatch: the DLQ entry of a rejected request names another
	// workflow, task or reason than its task_rejected event.
	RuleDLQMismatch = "dlq-mismatch"
)

// MaxViolations is how many violations a VerifyReport lists; it counts all.
const MaxViolations = 20

// maxOpenListed is how many open tasks a VerifyReport names.
const maxOpenListed = 20

// VerifyOptions select what Verify checks.
type VerifyOptions struct {
	// Workflow limits the check to one workflow's events (a subject filter).
	// Sequence gaps are then not checked: other workflows' events lie
	// between this one's.
	Workflow string
	// DLQ also checks that every task_failed and task_rejected has its one
	// DLQ entry.
	DLQ bool
	// Checkpoint, when set, is a checkpoint taken earlier (TakeCheckpoint):
	// a stream that ends before it or holds another event at its sequence
	// is a RuleRegression violation.
	Checkpoint *Checkpoint
	// StreamCheck, when set, checks the audit stream's settings (the CLI
	// passes broker.CheckAudit); its error is a RuleStreamConfig
	// violation: a stream updated to expire, limit or purge events.
	StreamCheck func(jetstream.StreamConfig) error
}

// RuleStreamConfig: the audit stream's settings let events be removed or
// altered (an update added max_age, say): what a worker refuses at start.
const RuleStreamConfig = "stream-config"

// Violation is one broken invariant.
type Violation struct {
	// Seq is the audit stream sequence of the offending event (for a
	// missing sequence, the first event after the gap).
	Seq uint64 `json:"seq"`
	// EventID is the event's Nats-Msg-Id, as stored.
	EventID string `json:"event_id"`
	// Subject is the event's subject.
	Subject string `json:"subject"`
	// Rule is one of the Rule* constants.
	Rule string `json:"rule"`
	// Detail explains what is wrong.
	Detail string `json:"detail"`
}

func (v Violation) String() string {
	return fmt.Sprintf("seq %d %s: %s: %s", v.Seq, v.EventID, v.Rule, v.Detail)
}

// VerifyReport is what Verify found.
type VerifyReport struct {
	Workflow string `json:"workflow,omitempty"`
	// Filter is the subject filter read; empty for the whole stream.
	Filter string `json:"filter,omitempty"`
	// FirstSeq and LastSeq are the first and last sequence read.
	FirstSeq uint64 `json:"first_seq"`
	LastSeq  uint64 `json:"last_seq"`
	// Events counts the events read; WorkflowEvents those of workflows
	// themselves (paused, resumed, cancelled).
	Events         uint64 `json:"events"`
	WorkflowEvents uint64 `json:"workflow_events"`
	// Tasks counts the tasks that have an event other than task_rejected;
	// each is Completed, Failed, Cancelled or Open (no terminal event yet:
	// running, waiting for a retry, or paused).
	Tasks     int `json:"tasks"`
	Completed int `json:"completed"`
	Failed    int `json:"failed"`
	Cancelled int `json:"cancelled"`
	Open      int `json:"open"`
	// OpenTasks names up to 20 open tasks as "<wf token>/<task token>".
	OpenTasks []string `json:"open_tasks,omitempty"`
	// Rejected counts task_rejected events: one per rejected request.
	Rejected int `json:"rejected"`
	// Redriven counts task_redriven events: one per DLQ entry redriven.
	// They are not steps of a task and end nothing.
	Redriven int `json:"redriven"`
	// SeqChecked tells whether sequence gaps were checked (whole stream).
	SeqChecked bool `json:"seq_checked"`
	// DLQChecked tells whether DLQ entries were cross-checked; DLQEntries
	// counts the entries read.
	DLQChecked bool `json:"dlq_checked"`
	DLQEntries int  `json:"dlq_entries"`
	// DLQHorizon is the time before which the DLQ may no longer hold an
	// entry (its MaxAge, or the oldest entry it kept once it removed some,
	// less a minute's slack); zero when it holds every entry ever stored.
	// DLQAgedOut counts the task_failed and task_rejected events older
	// than DLQHorizon that have no DLQ entry: aged out, not checked.
	DLQHorizon time.Time `json:"dlq_horizon,omitzero"`
	DLQAgedOut int       `json:"dlq_aged_out"`
	// CheckpointSeq is the last sequence of the checkpoint compared, if any.
	CheckpointSeq uint64 `json:"checkpoint_seq,omitempty"`
	// Duration is how long Verify took; EventsPerSec is Events/Duration.
	Duration     time.Duration `json:"duration_ns"`
	EventsPerSec float64       `json:"events_per_sec"`
	// ViolationCount counts every violation; Violations lists the first
	// MaxViolations by stream sequence, and First is the earliest.
	ViolationCount int         `json:"violation_count"`
	Violations     []Violation `json:"violations"`
	First          *Violation  `json:"first,omitempty"`
}

// OK reports whether no invariant is broken.
func (r VerifyReport) OK() bool { return r.ViolationCount == 0 }

// violations keeps the first MaxViolations by sequence and counts all.
type violations struct {
	list  []Violation
	total int
}

func (v *violations) add(x Violation) {
	v.total++
	if len(v.list) == MaxViolations && x.Seq >= v.list[len(v.list)-1].Seq {
		return
	}
	v.list = append(v.list, x)
	sort.SliceStable(v.list, func(i, j int) bool { return v.list[i].Seq < v.list[j].Seq })
	if len(v.list) > MaxViolations {
		v.list = v.list[:MaxViolations]
	}
}

// verifyPullBytes bounds what the reading consumer keeps buffered: some
// 20,000 events of usual size, and few of the largest.
const verifyPullBytes = 16 << 20

// Verify reads the audit stream once, in order (only opts.Workflow's events
// when it is set), and checks the contract's invariants:
//
//   - no sequence is missing (whole-stream checks only);
//   - every subject and Nats-Msg-Id has the contract's form, they agree,
//     and the body's event_id equals the Nats-Msg-Id;
//   - no event ID appears twice;
//   - each task's events follow the pipeline: task_accepted first, then
//     planner_decision, then per round implementer_change before
//     judge_verdict, a rejecting verdict followed by the next round,
//     task_completed only after an approving one, task_retried in between;
//   - a task has at most one task_completed, task_failed or task_cancelled,
//     and nothing after it (task_rejected events of other requests for the
//     same task are not part of the task and may come at any time);
//   - with opts.DLQ, every task_failed and task_rejected has exactly one
//     DLQ entry (rejections matched by Drover-Stream-Seq, failures by
//     workflow, task and reason), except that an event older than what the
//     DLQ can still hold (VerifyReport.DLQHorizon: its MaxAge, or its
//     oldest entry once it removed some) and without an entry is counted
//     in DLQAgedOut instead.
//
// Tasks without a terminal event are counted as open, not as violations.
// The DLQ is read after the audit stream, and a DLQ entry is always written
// before its event, so a verify that races with workers reports no false
// missing entry. An error means the check could not be made; violations are
// in the report.
func Verify(ctx context.Context, js jetstream.JetStream, names subjects.Names, opts VerifyOptions) (VerifyReport, error) {
	start := time.Now()
	rep := VerifyReport{Workflow: opts.Workflow, SeqChecked: opts.Workflow == ""}
	if opts.Workflow != "" {
		if err := subjects.ValidateID(opts.Workflow); err != nil {
			return rep, fmt.Errorf("audit: verify: workflow: %w", err)
		}
		rep.Filter = names.AuditFilter(opts.Workflow, "", "", "")
	}
	stream, err := js.Stream(ctx, names.AuditStream())
	if err != nil {
		return rep, fmt.Errorf("audit: verify: stream %s: %w", names.AuditStream(), err)
	}
	state := stream.CachedInfo().State
	var streamProblem error
	if opts.StreamCheck != nil {
		streamProblem = opts.StreamCheck(stream.CachedInfo().Config)
	}
	last := state.LastSeq
	if state.Msgs == 0 {
		last = 0 // nothing to read; a consumer would wait forever
	}
	if rep.Filter != "" && last > 0 {
		m, err := stream.GetLastMsgForSubject(ctx, rep.Filter)
		switch {
		case errors.Is(err, jetstream.ErrMsgNotFound):
			last = 0
		case err != nil:
			return rep, fmt.Errorf("audit: verify: last event of %s: %w", rep.Filter, err)
		default:
			last = m.Sequence
		}
	}
	c := newChecker(names, &rep)
	if last > 0 {
		cfg := jetstream.OrderedConsumerConfig{}
		if rep.Filter != "" {
			cfg.FilterSubjects = []string{rep.Filter}
		}
		err := readOrdered(ctx, js, names.AuditStream(), cfg, last, func(md *jetstream.MsgMetadata, m jetstream.Msg) {
			h := m.Headers()
			c.observe(md.Sequence.Stream, md.Timestamp, m.Subject(), h.Get(subjects.HeaderMsgID), m.Data())
			prev, has := h[subjects.HeaderPrev]
			c.chain(md.Sequence.Stream, m.Subject(), h.Get(subjects.HeaderMsgID), strings.Join(prev, ""), has, m.Data())
		})
		if err != nil {
			return rep, err
		}
	}
	if rep.SeqChecked && c.nextSeq <= state.LastSeq {
		c.viol.add(Violation{Seq: state.LastSeq, Rule: RuleMissingSeq,
			Detail: fmt.Sprintf("sequences %d to %d, the end of the stream, are missing: the stream denies deletes, so events were removed", c.nextSeq, state.LastSeq)})
	}
	c.finish()
	if streamProblem != nil {
		c.viol.add(Violation{Seq: 0, Subject: names.AuditStream(), Rule: RuleStreamConfig, Detail: streamProblem.Error()})
	}
	if opts.Checkpoint != nil {
		v, err := checkCheckpoint(ctx, stream, state.LastSeq, *opts.Checkpoint)
		if err != nil {
			return rep, err
		}
		if v != nil {
			c.viol.add(*v)
		}
		rep.CheckpointSeq = opts.Checkpoint.LastSeq
	}
	if opts.DLQ {
		if err := c.crossCheckDLQ(ctx, js, names); err != nil {
			return rep, err
		}
		rep.DLQChecked = true
	}
	rep.Duration = time.Since(start)
	if s := rep.Duration.Seconds(); s > 0 {
		rep.EventsPerSec = float64(rep.Events) / s
	}
	rep.ViolationCount, rep.Violations = c.viol.total, c.viol.list
	if rep.Violations == nil {
		rep.Violations = []Violation{}
	}
	if len(rep.Violations) > 0 {
		first := rep.Violations[0]
		rep.First = &first
	}
	return rep, nil
}

// readOrdered calls fn with every message of stream that cfg selects, in
// order, up to sequence last, through an ordered consumer with a large pull
// buffer. The consumer is deleted before it returns.
func readOrdered(ctx context.Context, js jetstream.JetStream, stream string, cfg jetstream.OrderedConsumerConfig, last uint64,
	fn func(md *jetstream.MsgMetadata, msg jetstream.Msg)) error {
	cons, err := streamread.OrderedConsumer(ctx, js, stream, cfg)
	if err != nil {
		return fmt.Errorf("audit: verify: consumer on %s: %w", stream, err)
	}
	defer streamread.DeleteConsumer(ctx, streamread.StreamOf(js, stream), cons)
	it, err := cons.Messages(jetstream.PullMaxBytes(verifyPullBytes))
	if err != nil {
		return fmt.Errorf("audit: verify: read %s: %w", stream, err)
	}
	defer it.Stop()
	for {
		msg, err := it.Next(jetstream.NextContext(ctx))
		if err != nil {
			if ctx.Err() != nil {
				return fmt.Errorf("audit: verify: %w", ctx.Err())
			}
			return fmt.Errorf("audit: verify: read %s: %w", stream, err)
		}
		md, err := msg.Metadata()
		if err != nil {
			return fmt.Errorf("audit: verify: read %s: %w", stream, err)
		}
		fn(md, msg)
		if md.Sequence.Stream >= last || md.NumPending == 0 {
			return nil
		}
	}
}
