package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// The sizes of what the contract-ops phase stores: those of a one-round
// sim task as Drover stores it (a state value with two, then three, audit
// events in its outbox; an audit event; a cached role result).
const (
	opsStateFirst = 2200
	opsStateFinal = 3600
	opsEvent      = 1000
	opsCacheEntry = 220
)

// opsValues are the bodies the contract-ops phase stores.
type opsValues struct{ first, final, event, entry []byte }

func newOpsValues() opsValues {
	return opsValues{
		first: padded(opsStateFirst, "state", "running"),
		final: padded(opsStateFinal, "state", "completed"),
		event: padded(opsEvent, "event_type", "bench"),
		entry: padded(opsCacheEntry, "action", "bench"),
	}
}

// padded is a JSON object {"<key>":"<value>","pad":"xx..."} of n bytes.
func padded(n int, key, value string) []byte {
	head := `{"` + key + `":"` + value + `","pad":"`
	return []byte(head + strings.Repeat("x", n-len(head)-2) + `"}`)
}

// runOps runs the contract-ops phase: per task, the JetStream operations
// a Drover worker performs for a cold one-round task under the wire
// contract, with messages of the sizes Drover stores and the contract's
// headers, and none of Drover's own work (no decoding, encoding, hashing or
// runner), overlapping whatever the contract lets a worker overlap
// (opsTask.overlapped). Its throughput is the most an implementation of the
// contract making those operations reaches on this server with this pool;
// Drover's share of it is what Drover's own code costs.
func runOps(ctx context.Context, cfg Config, url string) (Phase, error) {
	v := newOpsValues()
	return newRaw(cfg, "contract-ops (overlapped)", "opsx", 2, func(ctx context.Context, r *raw, i int, _ []byte) error {
		t := &opsTask{ctx: ctx, r: r, i: i, v: v, task: "t" + strconv.Itoa(i)}
		t.key = "bench." + t.task
		return t.overlapped()
	}).run(ctx, url)
}

// runMinimal runs the minimal worker's phase: contract-ops (overlapped)
// with each task's data made for real (taskData), from requests submitted
// as a producer publishes them.
func runMinimal(ctx context.Context, cfg Config, url string) (Phase, error) {
	m := newDataMaker(cfg)
	r := newRaw(cfg, "minimal worker", "min", 2, func(ctx context.Context, r *raw, i int, body []byte) error {
		t := &opsTask{ctx: ctx, r: r, i: i, task: "t" + strconv.Itoa(i)}
		t.key = "bench." + t.task
		var err error
		if t.data, err = m.make(ctx, i, body, r.auditTo, t.key); err != nil {
			return err
		}
		return t.overlapped()
	})
	r.request, r.index = m.request, m.index
	return r.run(ctx, url)
}

// runOpsCached runs the cached contract-ops phase: per task, the
// JetStream operations the contract requires of a task whose three roles
// are cache hits, made by a careful hand-written worker with none of
// Drover's own work: the claim read together with the planner's cache
// lookup (a hit), the implementer's and the judge's lookups (hits; each
// key depends on the role before), the one state write, the five fenced
// audit events one after another, the ack. The cache is filled before the
// phase, untimed. It is the floor of Drover's cached run on this server.
func runOpsCached(ctx context.Context, cfg Config, url string) (Phase, error) {
	v := newOpsValues()
	r := newRaw(cfg, "contract-ops (fully cached)", "opsc", 2, func(ctx context.Context, r *raw, i int, _ []byte) error {
		t := &opsTask{ctx: ctx, r: r, i: i, v: v, task: "t" + strconv.Itoa(i)}
		t.key = "bench." + t.task
		return t.cached()
	})
	r.prepare = func(ctx context.Context, r *raw) error {
		// In windows of half the async limit, so the fill never stalls.
		futures := make([]jetstream.PubAckFuture, 0, rawAsyncWindow/2)
		for i := range cfg.Tasks {
			for _, role := range []string{"planner", "implementer", "judge"} {
				f, err := r.js.PublishMsgAsync(&nats.Msg{Subject: "$KV." + r.kv[1].Bucket() + "." + cacheKey(role, i), Data: v.entry})
				if err != nil {
					return fmt.Errorf("filling the cache: %w", err)
				}
				if futures = append(futures, f); len(futures) == cap(futures) {
					if err := checkAcks(ctx, r.js, futures); err != nil {
						return fmt.Errorf("filling the cache: %w", err)
					}
					futures = futures[:0]
				}
			}
		}
		if err := checkAcks(ctx, r.js, futures); err != nil {
			return fmt.Errorf("filling the cache: %w", err)
		}
		return nil
	}
	return r.run(ctx, url)
}

// cacheKey is role's cache key for task i in a contract-ops phase.
func cacheKey(role string, i int) string { return fmt.Sprintf("%s.%064d", role, i) }

// opsTask is one task of a contract-ops phase.
type opsTask struct {
	ctx       context.Context
	r         *raw
	i         int
	v         opsValues
	task, key string
	seq       uint64    // the task's last audit sequence: the next event's fence
	data      *taskData // the minimal worker's data; nil: contract-ops' padding
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
		k, entry = cacheKey(string(taskRoles[r]), t.i), t.v.entry
	}
	start := time.Now()
	if _, err := cache.Get(t.ctx, k); !errors.Is(err, jetstream.ErrKeyNotFound) {
		return put{}, fmt.Errorf("cache get %s: want a miss, got %v", k, err)
	}
	t.r.ops.since("cache get (miss)", start)
	p := put{start: time.Now()}
	var err error
	p.f, err = t.r.js.PublishMsgAsync(&nats.Msg{Subject: "$KV." + cache.Bucket() + "." + k, Data: entry})
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

// hit is a role's cache lookup that finds the result.
func (t *opsTask) hit(role string) error {
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

// update is the last state write, a CAS on the first's revision.
func (t *opsTask) update(rev uint64) error {
	final := t.v.final
	if t.data != nil {
		final = t.data.final
	}
	start := time.Now()
	if _, err := t.r.kv[0].Update(t.ctx, t.key, final, rev); err != nil {
		return fmt.Errorf("state update %s: %w", t.key, err)
	}
	t.r.ops.since("state update (CAS)", start)
	return nil
}

// publish publishes one audit event fenced on the task's last audit
// sequence, as the contract requires, and moves the fence on.
func (t *opsTask) publish(k int) error {
	if t.data != nil {
		return t.send(t.data.events[k], t.data.events[k].Header.Get(subjects.HeaderMsgID))
	}
	actor, eventType := taskEvents[k].actor, taskEvents[k].eventType
	id := "bench/" + t.task + "/1/" + actor + "/" + eventType
	h := nats.Header{
		subjects.HeaderMsgID:         {id},
		subjects.HeaderContract:      {subjects.ContractVersion},
		subjects.HeaderCESpecVersion: {"1.0"},
		subjects.HeaderCEID:          {id},
		subjects.HeaderCESource:      {"drover/" + t.r.cfg.Names.Prefix()},
		subjects.HeaderCEType:        {"dev.drover." + eventType},
		subjects.HeaderCETime:        {time.Now().UTC().Format(time.RFC3339Nano)},
		subjects.HeaderCESubject:     {"bench/" + t.task},
		subjects.HeaderCEContentType: {"application/json"},
	}
	return t.send(&nats.Msg{Subject: t.r.auditTo + t.key + "." + actor + "." + eventType, Header: h, Data: t.v.event}, id)
}

// send publishes an audit event fenced on the task's last audit sequence
// and moves the fence on.
func (t *opsTask) send(msg *nats.Msg, id string) error {
	start := time.Now()
	ack, err := t.r.js.PublishMsg(t.ctx, msg, jetstream.WithExpectLastSequenceForSubject(t.seq, t.r.auditTo+t.key+".>"))
	if err != nil {
		return fmt.Errorf("audit publish %s: %w", id, err)
	}
	t.r.ops.since("audit publish (fenced)", start)
	t.seq = ack.Sequence
	return nil
}

// flushFirst publishes the first commit's events (task accepted, planner
// decision) in the background, while the next roles run.
func (t *opsTask) flushFirst() <-chan error {
	flushed := make(chan error, 1)
	go func() { flushed <- t.publishAll(0, 2) }()
	return flushed
}

// auditEvent is one audit event of a contract-ops task.
type auditEvent struct{ actor, eventType string }

// taskEvents are a one-round task's five events in their order: the first
// commit's two, then the last commit's three, the terminal one last.
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
func (t *opsTask) flushLast() error { return t.publishAll(2, len(taskEvents)) }

// overlapped makes a cold one-round task's operations (a state read, none
// yet; per role a cache lookup, a miss, and an asynchronous cache put; the
// first state write, planner done, with two fenced audit events; the last
// state write, round done, with three), overlapping what the contract lets
// a worker overlap, and waits only where it needs an answer:
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
	flushed := t.flushFirst()
	changed, err := t.lookup(1)
	var judged put
	if err == nil {
		judged, err = t.lookup(2)
	}
	if err == nil {
		err = t.update(rev)
	}
	if ferr := <-flushed; err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	if err := t.settle(changed, judged); err != nil {
		return err
	}
	return t.flushLast()
}

// cached makes a fully cached task's operations (runOpsCached).
func (t *opsTask) cached() error {
	err := t.alongsideClaim(func() error { return t.hit("planner") })
	for _, role := range []string{"implementer", "judge"} {
		if err == nil {
			err = t.hit(role)
		}
	}
	if err != nil {
		return err
	}
	if _, err := t.createWith(t.v.final); err != nil {
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
