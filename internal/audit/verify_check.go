package audit

import (
	"encoding/json"
	"fmt"
	"hash"
	"strconv"
	"strings"
	"time"

	"github.com/droverhq/drover/subjects"
)

// Event type codes, in the order of the contract's table; 0 is unknown.
const (
	tUnknown uint8 = iota
	tAccepted
	tPlanner
	tImplementer
	tJudge
	tRetried
	tCompleted
	tFailed
	tCancelled
	tRejected
	tRedriven
	tReviewRequested
	tReviewDecided
	tPaused
	tResumed
	tWorkflowCancelled
)

// typeRule is what the contract's audit table says of one event type.
type typeRule struct {
	et      subjects.EventType
	actor   subjects.Actor // "" for "the role"
	attempt int            // 0 or 1 exactly; -1 for a round (1 or more)
	suffix  bool           // the event ID ends in /<n>
}

var typeRules = [...]typeRule{
	tAccepted:          {subjects.EventTaskAccepted, subjects.ActorSystem, 1, false},
	tPlanner:           {subjects.EventPlannerDecision, "planner", 1, false},
	tImplementer:       {subjects.EventImplementerChange, "implementer", -1, false},
	tJudge:             {subjects.EventJudgeVerdict, "judge", -1, false},
	tRetried:           {subjects.EventTaskRetried, "", -1, true},
	tCompleted:         {subjects.EventTaskCompleted, subjects.ActorSystem, -1, false},
	tFailed:            {subjects.EventTaskFailed, subjects.ActorSystem, -1, false},
	tCancelled:         {subjects.EventTaskCancelled, subjects.ActorSystem, -1, false},
	tRejected:          {subjects.EventTaskRejected, subjects.ActorSystem, 0, true},
	tRedriven:          {subjects.EventTaskRedriven, subjects.ActorHuman, 0, true},
	tReviewRequested:   {subjects.EventReviewRequested, subjects.ActorSystem, -1, false},
	tReviewDecided:     {subjects.EventReviewDecided, subjects.ActorHuman, -1, true},
	tPaused:            {subjects.EventWorkflowPaused, subjects.ActorSystem, 0, true},
	tResumed:           {subjects.EventWorkflowResumed, subjects.ActorSystem, 0, true},
	tWorkflowCancelled: {subjects.EventWorkflowCancelled, subjects.ActorSystem, 0, false},
}

// typeCode maps an event type token to its code.
var typeCode = func() map[string]uint8 {
	m := map[string]uint8{}
	for i := tAccepted; i <= tWorkflowCancelled; i++ {
		m[string(typeRules[i].et)] = i
	}
	return m
}()

// actorCode numbers the actors for packed event keys: system 0, roles 1-3.
// A human shares the system's code: no event type is written by both.
func actorCode(a string) (uint64, bool) {
	switch a {
	case "system", "human":
		return 0, true
	case "planner":
		return 1, true
	case "implementer":
		return 2, true
	case "judge":
		return 3, true
	}
	return 0, false
}

// event is one audit message, parsed as far as the checks need.
type event struct {
	seq               uint64
	subject, id       string
	wf, task, actor   string // tokens from the subject
	key               string // "<wf>.<task>", a slice of the subject
	ts                *taskState
	typ               uint8
	attempt, n        uint64
	action            string
	at                time.Time // when the audit stream stored it
	stamp             time.Time // the body's timestamp, read with action
	data              []byte
	wellFormedEventID bool
}

// checker applies the invariants to events in stream order.
type checker struct {
	prefix   string // "<prefix>.audit."
	rep      *VerifyReport
	tasks    map[string]*taskState
	odd      map[string]uint64 // event IDs not of the contract's form -> seq
	nextSeq  uint64            // the sequence expected next (whole stream)
	rejects  []dlqNeed
	failures []dlqNeed
	viol     violations
	links    map[string]*chainLink // per task: the hash chain's head
	hasher   hash.Hash             // reused for the links
}

func newChecker(names subjects.Names, rep *VerifyReport) *checker {
	return &checker{
		prefix:  names.Prefix() + ".audit.",
		rep:     rep,
		tasks:   make(map[string]*taskState, 1024),
		odd:     map[string]uint64{},
		nextSeq: 1,
	}
}

// violate records a violation of rule by e.
func (c *checker) violate(e *event, rule, format string, args ...any) {
	c.viol.add(Violation{Seq: e.seq, EventID: e.id, Subject: e.subject, Rule: rule, Detail: fmt.Sprintf(format, args...)})
}

// observe checks one message of the audit stream, stored at at.
func (c *checker) observe(seq uint64, at time.Time, subject, msgID string, data []byte) {
	c.rep.Events++
	if c.rep.FirstSeq == 0 {
		c.rep.FirstSeq = seq
	}
	c.rep.LastSeq = seq
	e := event{seq: seq, at: at, subject: subject, id: msgID, data: data}
	if c.rep.SeqChecked {
		if seq != c.nextSeq {
			c.violate(&e, RuleMissingSeq, "sequences %d to %d are missing: the stream denies deletes, so events were removed", c.nextSeq, seq-1)
		}
		c.nextSeq = seq + 1
	}
	if !c.parseSubject(&e) || !c.parseEventID(&e) {
		return
	}
	c.checkBody(&e)
	if c.duplicate(&e) {
		return
	}
	reserved := e.task == subjects.Reserved
	switch {
	case e.typ >= tPaused:
		c.rep.WorkflowEvents++
		if !reserved {
			c.violate(&e, RuleSubject, "%s is a workflow event, but its subject names task %s", typeRules[e.typ].et, e.task)
		}
	case e.typ == tRedriven:
		// A person's decision about a request that already ended: it is
		// no step of the task's pipeline and ends nothing, so it is
		// checked for its ID only, on the task or on "_".
		c.rep.Redriven++
	case e.typ == tRejected:
		c.rep.Rejected++
		c.rejects = append(c.rejects, dlqNeed{seq: seq, id: msgID, subject: subject, wf: e.wf, task: e.task, reqSeq: e.n, reason: e.action, at: e.earliest()})
	case reserved:
		c.violate(&e, RuleSubject, "%s is a task event, but its subject names task %s (the workflow itself)", typeRules[e.typ].et, subjects.Reserved)
	default:
		c.step(e.ts, &e)
	}
}

// parseSubject reads wf, task, actor and type from the subject.
func (c *checker) parseSubject(e *event) bool {
	rest, ok := strings.CutPrefix(e.subject, c.prefix)
	var tok [4]string
	for i := 0; ok && i < 4; i++ {
		j := strings.IndexByte(rest, '.')
		if i == 3 {
			j = len(rest)
			ok = !strings.Contains(rest, ".")
		}
		if j <= 0 {
			ok = false
			break
		}
		tok[i] = rest[:j]
		rest = rest[min(j+1, len(rest)):]
	}
	if !ok {
		c.violate(e, RuleSubject, "not an audit subject %s<workflow>.<task>.<actor>.<event_type>", c.prefix)
		return false
	}
	e.wf, e.task, e.actor = tok[0], tok[1], tok[2]
	e.key = e.subject[len(c.prefix) : len(c.prefix)+len(e.wf)+1+len(e.task)]
	if e.typ = typeCode[tok[3]]; e.typ == tUnknown {
		c.violate(e, RuleSubject, "unknown event type %q", tok[3])
		return false
	}
	r := typeRules[e.typ]
	if _, known := actorCode(e.actor); !known || (r.actor != "" && string(r.actor) != e.actor) || (r.actor == "" && e.actor == "system") {
		want := string(r.actor)
		if want == "" {
			want = "planner, implementer or judge"
		}
		c.violate(e, RuleSubject, "%s written by actor %q; the contract says %s", r.et, e.actor, want)
		return false
	}
	if e.ts = c.tasks[e.key]; e.ts == nil {
		// A copy of the key, so the map does not keep the whole subject.
		e.ts = &taskState{ids: make([]idSeq, 0, 6)}
		c.tasks[strings.Clone(e.key)] = e.ts
	}
	return true
}

// parseEventID checks that the Nats-Msg-Id is the event ID the subject
// implies, and reads its attempt and /<n> suffix. An event ID of another
// form is still checked for duplicates, by its text.
func (c *checker) parseEventID(e *event) bool {
	if e.id == "" {
		c.violate(e, RuleEventID, "no %s header", subjects.HeaderMsgID)
		return false
	}
	var part [7]string
	k, rest := 0, e.id
	for ; k < len(part) && rest != ""; k++ {
		i := strings.IndexByte(rest, '/')
		if i < 0 {
			part[k], rest = rest, ""
			continue
		}
		part[k], rest = rest[:i], rest[i+1:]
	}
	r := typeRules[e.typ]
	want := 5
	if r.suffix {
		want = 6
	}
	bad := ""
	switch {
	case k != want || rest != "" || strings.HasSuffix(e.id, "/"):
		bad = fmt.Sprintf("has %d parts; %s has %d (<wf>/<task>/<attempt>/<actor>/<event_type>%s)", k, r.et, want, map[bool]string{true: "/<n>"}[r.suffix])
	case part[0] != e.wf || part[1] != e.task || part[3] != e.actor || part[4] != string(r.et):
		bad = "does not name the subject's workflow, task, actor and event type"
	}
	var err1, err2 error
	if k >= 3 {
		e.attempt, err1 = parseCanonical(part[2])
	}
	if bad == "" {
		if r.suffix {
			e.n, err2 = parseCanonical(part[5])
		}
		switch {
		case err1 != nil || err2 != nil || (r.suffix && e.n == 0):
			bad = "has an attempt or /<n> that is not a canonical number"
		case r.attempt >= 0 && e.attempt != uint64(r.attempt):
			bad = fmt.Sprintf("has attempt %d; %s is written with attempt %d", e.attempt, r.et, r.attempt)
		case r.attempt < 0 && e.attempt == 0:
			bad = fmt.Sprintf("has attempt 0; %s is written with its round, from 1", r.et)
		}
	}
	if bad != "" {
		c.violate(e, RuleEventID, "event ID %s", bad)
		return true // still checked for duplicates and order, by its text
	}
	e.wellFormedEventID = true
	return true
}

// parseCanonical reads a decimal number written without leading zeros.
func parseCanonical(s string) (uint64, error) {
	if len(s) > 1 && s[0] == '0' {
		return 0, strconv.ErrSyntax
	}
	return strconv.ParseUint(s, 10, 64)
}

// bodyPrefix starts the body of an event json.Marshal wrote.
const bodyPrefix = `{"event_id":"`

// checkBody compares the body's event_id with the Nats-Msg-Id and reads the
// action of the events whose action matters. A body that starts with the
// event ID, as Drover writes it, is not decoded unless its action matters:
// only an ID that JSON writes as it is (the bytes of Drover's tokens and
// their separators), since the bytes of an escape (a foreign writer's "\n")
// would match while the decoded ID differs.
func (c *checker) checkBody(e *event) {
	needAction := e.typ == tJudge || e.typ == tFailed || e.typ == tRejected || e.typ == tReviewDecided
	d := e.data
	if !needAction && verbatimInJSON(e.id) && len(d) > len(bodyPrefix)+len(e.id) && string(d[:len(bodyPrefix)]) == bodyPrefix &&
		string(d[len(bodyPrefix):len(bodyPrefix)+len(e.id)]) == e.id && d[len(bodyPrefix)+len(e.id)] == '"' {
		return
	}
	var body struct {
		EventID   string    `json:"event_id"`
		Action    string    `json:"action"`
		Timestamp time.Time `json:"timestamp"`
	}
	if err := json.Unmarshal(d, &body); err != nil {
		c.violate(e, RuleBody, "body is not an audit event: %v", err)
		return
	}
	if body.EventID != e.id {
		c.violate(e, RuleEventIDBody, "body event_id %q differs from %s", body.EventID, subjects.HeaderMsgID)
	}
	e.action, e.stamp = body.Action, body.Timestamp
}

// verbatimInJSON reports whether JSON writes s as it is, and so reads back
// the same string from its bytes: only the bytes of event IDs as Drover
// writes them (its tokens' [A-Za-z0-9_-], the '=' of their escapes, the '/'
// between them).
func verbatimInJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' || c == '=' || c == '/') {
			return false
		}
	}
	return true
}

// earliest is the earlier of the event's stored time and its body's
// timestamp (zero if it has none).
func (e *event) earliest() time.Time {
	if !e.stamp.IsZero() && e.stamp.Before(e.at) {
		return e.stamp
	}
	return e.at
}

// duplicate reports whether e's event ID was seen before, and records it.
func (c *checker) duplicate(e *event) bool {
	var first uint64
	seen := false
	if ac, _ := actorCode(e.actor); e.wellFormedEventID && e.attempt < 1<<18 && e.n < 1<<40 {
		seen, first = e.ts.seen(uint64(e.typ)<<60|ac<<58|e.attempt<<40|e.n, e.seq)
	} else if first, seen = c.odd[e.id]; !seen {
		c.odd[e.id] = e.seq
	}
	if seen {
		c.violate(e, RuleDuplicateID, "event ID already stored at seq %d", first)
	}
	return seen
}
