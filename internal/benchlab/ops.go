package benchlab

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/bench"
	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/subjects"
)

// opsValues are the bodies the contract-ops phase stores, each of the size
// of its counterpart in a one-round sim task's data as Drover's encoders
// make it (taskData): the state after the planner (two events in its
// outbox), after the implementer (one), the last state (two), a fully
// cached task's one state (all
// five), the five audit events and the three cached role results.
// Measured from a sample task when a phase starts, so they follow the
// encoders instead of constants that drift from them.
type opsValues struct {
	first, mid, final []byte
	cached            []byte    // a fully cached task's one state: the last, all five events in its outbox
	events            [5][]byte // taskEvents' bodies, in their order
	entries           [len(taskRoles)][]byte
}

// opsSampleTask is the task whose data sizes contract-ops' values.
const opsSampleTask = 1000

// newOpsValues pads contract-ops' values to the sizes of m's data for
// opsSampleTask.
func newOpsValues(m *dataMaker) (opsValues, error) {
	msg, err := m.request(opsSampleTask)
	if err != nil {
		return opsValues{}, fmt.Errorf("benchlab: contract-ops sample request: %w", err)
	}
	d, err := m.make(context.Background(), opsSampleTask, msg.Data, "", "")
	if err != nil {
		return opsValues{}, fmt.Errorf("benchlab: contract-ops sample data: %w", err)
	}
	cached, err := cachedState(d.first, d.mid, d.final)
	if err != nil {
		return opsValues{}, fmt.Errorf("benchlab: contract-ops sample data: %w", err)
	}
	v := opsValues{first: padded(len(d.first), "state", "running"), mid: padded(len(d.mid), "state", "running"),
		final: padded(len(d.final), "state", "completed"), cached: padded(len(cached), "state", "completed")}
	for k, ev := range d.events {
		v.events[k] = padded(len(ev.Data), "event_type", taskEvents[k].eventType)
	}
	for r, entry := range d.entries {
		v.entries[r] = padded(len(entry), "action", string(taskRoles[r]))
	}
	return v, nil
}

// cachedState is the state a fully cached task writes, its one write: the
// last state with the earlier commits' events in its outbox too, since
// cached results are committed with the round.
func cachedState(states ...[]byte) ([]byte, error) {
	var last subjects.TaskState
	var outbox []subjects.OutboxItem
	for _, raw := range states {
		last = subjects.TaskState{}
		if err := json.Unmarshal(raw, &last); err != nil {
			return nil, err
		}
		outbox = append(outbox, last.Outbox...)
	}
	last.Outbox = outbox
	return json.Marshal(&last)
}

// padded is a JSON object {"<key>":"<value>","pad":"xx..."} of n bytes,
// or of the least such object's size if n is less.
func padded(n int, key, value string) []byte {
	head := `{"` + key + `":"` + value + `","pad":"`
	return []byte(head + strings.Repeat("x", max(n-len(head)-2, 0)) + `"}`)
}

// runOps runs the contract-ops phase: per task, the JetStream operations
// a Drover worker performs for a cold one-round task under the wire
// contract, with messages of the sizes Drover stores (opsValues), the
// contract's headers and cache keys of its shape (cacheKey), and none of
// Drover's own work (no decoding, encoding, hashing or runner),
// overlapping whatever the contract lets a worker overlap
// (opsTask.overlapped). Its requests are published as a producer publishes
// them, as the Drover phase's are (the producer shares the process's
// CPU). Its throughput is the most an implementation of the contract
// making those operations reaches on this server with this pool; Drover's
// share of it is what Drover's own code costs.
func runOps(ctx context.Context, cfg Config, url string) (Result, error) {
	m := newDataMaker(cfg)
	v, err := newOpsValues(m)
	if err != nil {
		return Result{}, err
	}
	return newTaskPhase(cfg, m, "contract-ops (overlapped)", "opsx", func(t *opsTask, _ []byte) error {
		t.v = v
		return t.overlapped()
	}).run(ctx, url)
}

// newTaskPhase is a raw phase fed the requests a producer publishes for
// m's workflow; work does each task's part on its opsTask, given the
// request's body.
func newTaskPhase(cfg Config, m *dataMaker, name, tag string, work func(t *opsTask, body []byte) error) *raw {
	r := newRaw(cfg, name, tag, 2, func(ctx context.Context, r *raw, i int, body []byte) error {
		return work(newOpsTask(ctx, r, i, m.wf), body)
	})
	r.request, r.index = m.request, m.index
	r.ttls = []time.Duration{0, broker.DefaultCacheTTL} // the state's bucket, the cache's
	return r
}

// runMinimal runs the minimal worker's phase: contract-ops (overlapped)
// with each task's data made for real (taskData), from requests submitted
// as a producer publishes them.
func runMinimal(ctx context.Context, cfg Config, url string) (Result, error) {
	m := newDataMaker(cfg)
	return newTaskPhase(cfg, m, "minimal worker", "min", func(t *opsTask, body []byte) (err error) {
		if t.data, err = m.make(t.ctx, t.i, body, t.r.auditTo, t.key); err != nil {
			return err
		}
		return t.overlapped()
	}).run(ctx, url)
}

// runOpsCached runs the cached contract-ops phase: per task, the
// JetStream operations the contract requires of a task whose three roles
// are cache hits, made by a careful hand-written worker with none of
// Drover's own work: the claim read together with the planner's cache
// lookup (a hit), the implementer's and the judge's lookups (hits; each
// key depends on the role before), the one state write, the five fenced
// audit events one after another, the ack. The cache is filled before the
// phase, untimed. It is the floor of Drover's cached run on this server.
func runOpsCached(ctx context.Context, cfg Config, url string) (Result, error) {
	m := newDataMaker(cfg)
	v, err := newOpsValues(m)
	if err != nil {
		return Result{}, err
	}
	r := newTaskPhase(cfg, m, "contract-ops (fully cached)", "opsc", func(t *opsTask, _ []byte) error {
		t.v = v
		return t.cached()
	})
	r.prepare = func(ctx context.Context, r *raw) error {
		// In windows of half the async limit, so the fill never stalls.
		futures := make([]jetstream.PubAckFuture, 0, rawAsyncWindow/2)
		for i := range cfg.Tasks {
			for role := range taskRoles {
				f, err := r.js.PublishMsgAsync(&nats.Msg{Subject: "$KV." + r.kv[1].Bucket() + "." + cacheKey(role, i), Data: v.entries[role]})
				if err != nil {
					return fmt.Errorf("filling the cache: %w", err)
				}
				if futures = append(futures, f); len(futures) == cap(futures) {
					if err := bench.CheckAcks(ctx, r.js, futures); err != nil {
						return fmt.Errorf("filling the cache: %w", err)
					}
					futures = futures[:0]
				}
			}
		}
		if err := bench.CheckAcks(ctx, r.js, futures); err != nil {
			return fmt.Errorf("filling the cache: %w", err)
		}
		return nil
	}
	return r.run(ctx, url)
}

// cacheKey is the cache key of taskRoles[role] for task i in a
// contract-ops phase. It has the contract's shape, <role>.<sha256 hex>,
// and its 64 hex digits are spread as evenly as a sha256's (four
// splitmix64 outputs, distinct for distinct task and role), made without
// hashing. The shape matters: the server keeps a stream's subjects in a
// radix tree, which costs more to insert into and search with keys as
// spread as the contract's than with sequential ones sharing long
// prefixes, which no implementation of the contract could use.
func cacheKey(role, i int) string {
	var sum [32]byte
	seed := uint64(i*len(taskRoles)+role) * 4
	for w := range 4 {
		binary.BigEndian.PutUint64(sum[w*8:], splitmix64(seed+uint64(w)))
	}
	return string(taskRoles[role]) + "." + hex.EncodeToString(sum[:])
}

// splitmix64 is a bijection of 64-bit words whose outputs for successive
// inputs look independent and uniform (SplitMix64's finaliser).
func splitmix64(x uint64) uint64 {
	x += 0x9e3779b97f4a7c15
	x = (x ^ x>>30) * 0xbf58476d1ce4e5b9
	x = (x ^ x>>27) * 0x94d049bb133111eb
	return x ^ x>>31
}

// opsTask is one task of a contract-ops phase.
type opsTask struct {
	ctx       context.Context
	r         *raw
	i         int
	v         opsValues
	task      string
	key       string    // "<wf>.<task>": its state key and audit subjects' middle
	ceSubject string    // "<wf>/<task>": its events' ce-subject and their IDs' start
	ceSource  string    // its events' ce-source
	subject   string    // its audit subjects up to the actor
	fence     string    // its audit subjects' filter, the fence of its events
	seq       uint64    // the task's last audit sequence: the next event's fence
	data      *taskData // the minimal worker's data; nil: contract-ops' padding
}

// newOpsTask is task i of workflow wf, named as Drover names the bench's
// tasks, so its subjects, keys and IDs are as long as Drover's.
func newOpsTask(ctx context.Context, r *raw, i int, wf string) *opsTask {
	task := "t" + strconv.Itoa(i)
	key := wf + "." + task
	return &opsTask{ctx: ctx, r: r, i: i, task: task, key: key, ceSubject: wf + "/" + task,
		ceSource: "drover/" + r.cfg.Names.Prefix(), subject: r.auditTo + key + ".", fence: r.auditTo + key + ".>"}
}

// put is a cache put in flight.
type put struct {
	f     jetstream.PubAckFuture
	start time.Time
}

// stateGet reads the task's state, which a cold task does not have yet.
func (t *opsTask) stateGet() error {
	start := time.Now()
	if _, err := t.r.kv[0].Get(t.ctx, t.key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("state get %s: want no state, got %v", t.key, err)
	}
	t.r.ops.since("state get (claim read)", start)
	return nil
}

// lookup is a role's cache lookup (a miss), then, the role having run, the
// asynchronous put of its result.
func (t *opsTask) lookup(r int) (put, error) {
	cache := t.r.kv[1]
	var k string
	var entry []byte
	if t.data != nil {
		k, entry = t.data.keys[r], t.data.entries[r]
	} else {
		k, entry = cacheKey(r, t.i), t.v.entries[r]
	}
	start := time.Now()
	if _, err := cache.Get(t.ctx, k); !errors.Is(err, jetstream.ErrKeyNotFound) {
		return put{}, fmt.Errorf("cache get %s: want a miss, got %v", k, err)
	}
	t.r.ops.since("cache get (miss)", start)
	p := put{start: time.Now()}
	var err error
	p.f, err = t.r.js.PublishMsgAsync(&nats.Msg{Subject: "$KV." + t.r.kv[1].Bucket() + "." + k, Data: entry})
	return p, err
}

// settle waits for cache puts: their results are in the cache before an
// event says their roles are done.
func (t *opsTask) settle(ps ...put) error {
	for _, p := range ps {
		if err := settle(t.ctx, p.f); err != nil {
			return fmt.Errorf("cache put: %w", err)
		}
		t.r.ops.overlapped("cache put (async)", p.start)
	}
	return nil
}

// hit is a role's cache lookup (taskRoles[role]) that finds the result.
func (t *opsTask) hit(role int) error {
	k := cacheKey(role, t.i)
	start := time.Now()
	if _, err := t.r.kv[1].Get(t.ctx, k); err != nil {
		return fmt.Errorf("cache get %s: want a hit: %w", k, err)
	}
	t.r.ops.since("cache get (hit)", start)
	return nil
}

// create is the first state write: it fails if the key exists.
func (t *opsTask) create() (uint64, error) {
	if t.data != nil {
		return t.createWith(t.data.first)
	}
	return t.createWith(t.v.first)
}

// createWith is a state create with value.
func (t *opsTask) createWith(value []byte) (uint64, error) {
	start := time.Now()
	rev, err := t.r.kv[0].Create(t.ctx, t.key, value)
	if err != nil {
		return 0, fmt.Errorf("state create %s: %w", t.key, err)
	}
	t.r.ops.since("state create (CAS)", start)
	return rev, nil
}

// update is a later state write, a CAS on the previous one's revision:
// the state after the implementer (mid), else the last one.
func (t *opsTask) update(rev uint64, mid bool) (uint64, error) {
	value := t.v.final
	switch {
	case mid && t.data != nil:
		value = t.data.mid
	case mid:
		value = t.v.mid
	case t.data != nil:
		value = t.data.final
	}
	start := time.Now()
	rev, err := t.r.kv[0].Update(t.ctx, t.key, value, rev)
	if err != nil {
		return 0, fmt.Errorf("state update %s: %w", t.key, err)
	}
	t.r.ops.since("state update (CAS)", start)
	return rev, nil
}

// publish publishes one audit event fenced on the task's last audit
// sequence, as the contract requires, and moves the fence on.
func (t *opsTask) publish(k int) error {
	if t.data != nil {
		return t.send(t.data.events[k], t.data.events[k].Header.Get(subjects.HeaderMsgID))
	}
	msg := t.event(k)
	err := t.send(msg, msg.Header.Get(subjects.HeaderMsgID))
	// A synchronous publish has written the headers out when it returns.
	releaseOpsHeader(msg.Header)
	return err
}

// opsHeaders are the headers of contract-ops' events: those of
// audit.Publisher.Msg and Drover-Prev.
const opsHeaders = 10

// opsHeaderPool holds the header maps of contract-ops' events, as
// Drover's publisher pools its own: a careful worker makes no map per
// event.
var opsHeaderPool = sync.Pool{New: func() any { return make(nats.Header, opsHeaders+3) }}

// releaseOpsHeader empties h and keeps it for the next event.
func releaseOpsHeader(h nats.Header) {
	clear(h)
	opsHeaderPool.Put(h)
}

// opsCETypes are the ce-type headers of taskEvents, made once.
var opsCETypes = func() []string {
	types := make([]string, len(taskEvents))
	for k, ev := range taskEvents {
		types[k] = "dev.drover." + ev.eventType
	}
	return types
}()

// event is contract-ops' message of taskEvents[k]: the contract's subject
// and headers (those of Msg, and Drover-Prev) and a body of the event's
// size. Like Drover's publisher, it makes what varies per event (the
// ID, the time, the subject) and takes the rest from the task or the
// phase, its values in one backing array and its map from a pool.
func (t *opsTask) event(k int) *nats.Msg {
	ev := taskEvents[k]
	id := t.ceSubject + "/1/" + ev.actor + "/" + ev.eventType
	prev := opsPrev
	if k == 0 {
		prev = ""
	}
	vals := [opsHeaders]string{id, subjects.ContractVersion, "1.0", id, t.ceSource, opsCETypes[k],
		time.Now().UTC().Format(time.RFC3339Nano), t.ceSubject, "application/json", prev}
	keys := [opsHeaders]string{subjects.HeaderMsgID, subjects.HeaderContract, subjects.HeaderCESpecVersion,
		subjects.HeaderCEID, subjects.HeaderCESource, subjects.HeaderCEType, subjects.HeaderCETime,
		subjects.HeaderCESubject, subjects.HeaderCEContentType, subjects.HeaderPrev}
	h := opsHeaderPool.Get().(nats.Header)
	for i := range keys {
		h[keys[i]] = vals[i : i+1 : i+1]
	}
	return &nats.Msg{Subject: t.subject + ev.actor + "." + ev.eventType, Header: h, Data: t.v.events[k]}
}

// send publishes an audit event fenced on the task's last audit sequence
// and moves the fence on.
func (t *opsTask) send(msg *nats.Msg, id string) error {
	start := time.Now()
	fence := [...]string{strconv.FormatUint(t.seq, 10), t.fence}
	msg.Header[jetstream.ExpectedLastSubjSeqHeader] = fence[0:1:1]
	msg.Header[jetstream.ExpectedLastSubjSeqSubjHeader] = fence[1:2:2]
	ack, err := t.r.js.PublishMsg(t.ctx, msg)
	if err != nil {
		return fmt.Errorf("audit publish %s: %w", id, err)
	}
	t.r.ops.since("audit publish (fenced)", start)
	t.seq = ack.Sequence
	return nil
}

// flushAhead publishes a commit's events, taskEvents[from:to], in the
// background while the next role runs: the first commit's (task
// accepted, planner decision), then the implementer's.
func (t *opsTask) flushAhead(from, to int) <-chan error {
	flushed := make(chan error, 1)
	go func() { flushed <- t.publishAll(from, to) }()
	return flushed
}

// opsPrev is contract-ops' Drover-Prev: a link's length (64 hex digits)
// on every event but a task's first, whose link is empty, as the
// contract's hash chain has it, with no hashing.
var opsPrev = strings.Repeat("0", 64)

// auditEvent is one audit event of a contract-ops task.
type auditEvent struct{ actor, eventType string }

// taskEvents are a one-round task's five events in their order: the first
// commit's two, the implementer's commit's one, then the last commit's
// two, the terminal one last.
var taskEvents = []auditEvent{
	{"system", string(subjects.EventTaskAccepted)},
	{"planner", string(subjects.EventPlannerDecision)},
	{"implementer", string(subjects.EventImplementerChange)},
	{"judge", string(subjects.EventJudgeVerdict)},
	{"system", string(subjects.EventTaskCompleted)},
}

// publishAll publishes taskEvents[from:to] one after another, each fenced
// on the last.
func (t *opsTask) publishAll(from, to int) error {
	for k := from; k < to; k++ {
		if err := t.publish(k); err != nil {
			return err
		}
	}
	return nil
}

// flushLast publishes the last commit's events; the terminal one is last.
func (t *opsTask) flushLast() error { return t.publishAll(3, len(taskEvents)) }

// overlapped makes a cold one-round task's operations (a state read, none
// yet; per role a cache lookup, a miss, and an asynchronous cache put; the
// first state write, planner done, with two fenced audit events; the
// second, implementer done, with one, written before the judge starts; the
// last, round done, with two), overlapping what the contract lets a worker
// overlap, and waits only where it needs an answer:
//   - the claim read runs together with the planner's cache lookup (a
//     duplicate is still refused before the planner's runner starts);
//   - the last state write is sent while the first commit's events are in
//     flight (its outbox would carry them until they are stored), instead
//     of after them; the last events still wait for it, and the state
//     writes stay a chain of CAS on revisions;
//   - cache puts stay asynchronous, settled before the events that say
//     their roles are done.
//
// What it cannot overlap: each audit event is fenced on the sequence of
// the task's previous one, so a commit's events are published one after
// another (one round trip each), and the terminal event is stored before
// the ack.
func (t *opsTask) overlapped() error {
	var planned put
	if err := t.alongsideClaim(func() (err error) {
		planned, err = t.lookup(0)
		return err
	}); err != nil {
		return err
	}
	rev, err := t.create()
	if err != nil {
		return err
	}
	if err := t.settle(planned); err != nil {
		return err
	}
	flushed := t.flushAhead(0, 2)
	changed, err := t.lookup(1)
	if err == nil {
		// The implementer that ran is recorded before the judge starts:
		// its state write waits for the first commit's events.
		err = <-flushed
		flushed = nil
	}
	if err == nil {
		rev, err = t.update(rev, true)
	}
	if err == nil {
		err = t.settle(changed)
	}
	if err != nil {
		if flushed != nil {
			return errors.Join(err, <-flushed)
		}
		return err
	}
	flushed = t.flushAhead(2, 3)
	judged, err := t.lookup(2)
	if err == nil {
		_, err = t.update(rev, false)
	}
	if ferr := <-flushed; err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	if err := t.settle(judged); err != nil {
		return err
	}
	return t.flushLast()
}

// cached makes a fully cached task's operations (runOpsCached).
func (t *opsTask) cached() error {
	err := t.alongsideClaim(func() error { return t.hit(0) })
	for role := 1; role < len(taskRoles) && err == nil; role++ {
		err = t.hit(role)
	}
	if err != nil {
		return err
	}
	if _, err := t.createWith(t.v.cached); err != nil {
		return err
	}
	return t.publishAll(0, len(taskEvents))
}

// alongsideClaim runs the claim read (stateGet) while lookup runs, as a
// careful worker overlaps them, and returns the first error of the two.
func (t *opsTask) alongsideClaim(lookup func() error) error {
	claimed := make(chan error, 1)
	go func() { claimed <- t.stateGet() }()
	err := lookup()
	if cerr := <-claimed; err == nil {
		err = cerr
	}
	return err
}
