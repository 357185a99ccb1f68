package benchlab

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/bench"
	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// taskData is what the minimal worker stores for one cold one-round task:
// the data itself, made for real, where contract-ops stores padding of the
// same sizes. The minimal worker is contract-ops (overlapped) plus the work
// no implementation of the contract can skip: it takes requests published
// as a producer publishes them, decodes each strictly, runs the sim for the
// three roles, computes their cache keys and encodes their cache entries,
// builds the five events with the contract's headers, encodes them and
// links each to the one before (the hash chain), and encodes the task's two
// states with their outboxes. It uses Drover's own encoders, sim and header
// builder, and none of its pipeline: no claim rules, workflow gate,
// heartbeats, retries, metrics, spans or timeout per operation. Drover's
// ratio to it is what the pipeline costs; its ratio to contract-ops is what
// the data costs, a little less than Drover's data: its events carry no
// durations or role metadata, and no large field is moved to a blob.
type taskData struct {
	entries      [3][]byte    // the roles' cache entries, in role order
	keys         [3]string    // their cache keys
	events       [5]*nats.Msg // taskEvents' messages, Drover-Prev set
	first, final []byte       // the state after the planner, the last one
	mid          []byte       // the state after the implementer
}

// taskRoles are the roles of a one-round task in their order.
var taskRoles = [3]subjects.Role{subjects.RolePlanner, subjects.RoleImplementer, subjects.RoleJudge}

// dataMaker makes the minimal worker's requests and task data.
type dataMaker struct {
	names  subjects.Names
	wf     string           // the phase's workflow
	pub    *audit.Publisher // builds the events' messages; publishes none
	sim    *runner.Sim
	limits subjects.Limits
}

// newDataMaker makes the data of the tasks of a fresh workflow.
func newDataMaker(cfg Config) *dataMaker {
	cfg = withDefaults(cfg)
	return &dataMaker{names: cfg.Names, wf: bench.NewWorkflowID(),
		pub: audit.NewPublisher(nil, cfg.Names), sim: runner.NewSim(runner.SimOptions{}),
		limits: subjects.Limits{MaxBytes: subjects.DefaultMaxBodyBytes}}
}

// request is task i's request as a producer publishes it: the body and
// headers of producer.Msg.
func (m *dataMaker) request(i int) (*nats.Msg, error) {
	return producer.Msg(m.names, bench.Queue, bench.ColdRequests(m.wf)(i))
}

// index is the i of a request, from its Nats-Msg-Id ("<workflow>/t<i>").
func (m *dataMaker) index(msg jetstream.Msg) (int, bool) {
	wf, task, ok := strings.Cut(msg.Headers().Get(subjects.HeaderMsgID), "/")
	if !ok || wf != subjects.IDToken(m.wf) {
		return 0, false
	}
	return bench.TaskIndex(task, math.MaxInt)
}

// make is the data of task i, whose request is body; auditTo and key make
// its audit subjects.
func (m *dataMaker) make(ctx context.Context, i int, body []byte, auditTo, key string) (*taskData, error) {
	req, rej := subjects.DecodeTask(body, m.limits)
	if rej != nil {
		return nil, fmt.Errorf("request %d: %w", i, rej)
	}
	req = req.WithDefaults()
	now := time.Now().UTC()
	d := &taskData{}
	st := subjects.TaskState{Workflow: req.Workflow, Task: req.ID, State: subjects.StateRunning, Attempt: 1,
		Outputs: make(map[subjects.Role]string, 3), UpdatedAt: now, Worker: bench.WorkerName, Queue: bench.Queue,
		StreamSeq: uint64(i + 1), Delivery: 1, Type: req.Type, StartedAt: now}
	newEvent := func(et subjects.EventType, actor subjects.Actor) *subjects.AuditEvent {
		return &subjects.AuditEvent{EventID: subjects.EventID(req.Workflow, req.ID, 1, actor, et, 0), EventType: et,
			WorkflowID: req.Workflow, TaskID: req.ID, Actor: actor, Attempt: 1, Timestamp: now, Status: subjects.StatusSuccess, Worker: bench.WorkerName}
	}
	var (
		outbox []subjects.OutboxItem
		prev   string
		n      int
	)
	add := func(ev *subjects.AuditEvent) error {
		oe, err := subjects.EncodeEvent(ev)
		if err != nil {
			return err
		}
		msg := m.pub.Msg(oe, "")
		msg.Subject = auditTo + key + "." + string(oe.Actor) + "." + string(oe.Type)
		msg.Header[subjects.HeaderPrev] = []string{prev}
		prev = audit.LinkHex(msg.Subject, prev, msg.Data)
		d.events[n] = msg
		n++
		outbox = append(outbox, subjects.OutboxItem{Event: oe})
		return nil
	}
	input, err := json.Marshal(&req)
	if err != nil {
		return nil, err
	}
	ev := newEvent(subjects.EventTaskAccepted, subjects.ActorSystem)
	ev.Action, ev.Input = "accepted", input
	md := appendJSONString([]byte(`{"queue":`), bench.Queue)
	ev.Metadata = append(strconv.AppendInt(append(md, `,"stream_seq":`...), int64(i+1), 10), '}')
	if err := add(ev); err != nil {
		return nil, err
	}
	var plan, change, verdict json.RawMessage
	for r, role := range taskRoles {
		rq := runner.Request{Role: role, Task: req, Attempt: 1, Plan: plan, Change: change}
		d.keys[r] = cache.Key(m.sim.Identity(), rq)
		res, err := m.sim.Run(ctx, rq)
		if err != nil {
			return nil, err
		}
		if d.entries[r], err = json.Marshal(res); err != nil {
			return nil, err
		}
		st.Outputs[role] = d.keys[r]
		ev := newEvent(subjects.RoleEvent(role), subjects.ActorOf(role))
		ev.Action, ev.Reasoning, ev.Output = res.Action, res.Reasoning, res.Output
		ev.Input = append(appendJSONString([]byte(`{"attempt":1,"cache_key":`), d.keys[r]), '}')
		if err := add(ev); err != nil {
			return nil, err
		}
		switch role {
		case subjects.RolePlanner:
			plan = res.Output
			st.Stage, st.Outbox = string(subjects.RoleImplementer), outbox
			if d.first, err = json.Marshal(&st); err != nil {
				return nil, err
			}
			outbox = nil
		case subjects.RoleImplementer:
			change = res.Output
			st.Stage, st.Outbox = string(subjects.RoleJudge), outbox
			if d.mid, err = json.Marshal(&st); err != nil {
				return nil, err
			}
			outbox = nil
		case subjects.RoleJudge:
			verdict = res.Output
		}
	}
	// The final result, as the contract has it: {"attempts","change","verdict"}.
	result := append([]byte(`{"attempts":1,"change":`), change...)
	result = append(result, `,"verdict":`...)
	result = append(append(result, verdict...), '}')
	ev = newEvent(subjects.EventTaskCompleted, subjects.ActorSystem)
	ev.Action, ev.Output = "completed", result
	if err := add(ev); err != nil {
		return nil, err
	}
	st.State, st.Stage, st.Result, st.Outbox, st.UpdatedAt = subjects.StateCompleted, subjects.StageDone, result, outbox, time.Now().UTC()
	if d.final, err = json.Marshal(&st); err != nil {
		return nil, err
	}
	return d, nil
}

// appendJSONString appends s to dst as json.Marshal writes a string.
func appendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return append(dst, b...)
}
