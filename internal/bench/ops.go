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

// runOps runs the contract-ops phase: per task, the JetStream operations a
// Drover worker performs for a cold one-round task under the wire contract,
// in its order and overlap, with messages of the sizes Drover stores and
// the contract's headers, and none of Drover's own work (no decoding,
// encoding, hashing or runner). Its throughput is the most any
// implementation of the contract could reach on this server with this
// pool; Drover's share of it is what Drover's own code costs.
//
// Per task: a state read (none yet), then per role a cache lookup (a miss)
// and an asynchronous cache put; the first state write (planner done) with
// two fenced audit events published while the next roles run; the last
// state write (round done) and three fenced audit events.
func runOps(ctx context.Context, cfg Config, url string) (Phase, error) {
	v := newOpsValues()
	return newRaw(cfg, "contract-ops", "ops", 2, func(ctx context.Context, r *raw, i int) error {
		return opsWork(ctx, r, i, v)
	}).run(ctx, url)
}

func opsWork(ctx context.Context, r *raw, i int, v opsValues) error {
	state, cache := r.kv[0], r.kv[1]
	task := "t" + strconv.Itoa(i)
	key := "bench." + task
	if _, err := state.Get(ctx, key); !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("state get %s: want no state, got %v", key, err)
	}
	lookup := func(role string) (jetstream.PubAckFuture, error) {
		k := fmt.Sprintf("%s.%064d", role, i)
		if _, err := cache.Get(ctx, k); !errors.Is(err, jetstream.ErrKeyNotFound) {
			return nil, fmt.Errorf("cache get %s: want a miss, got %v", k, err)
		}
		return r.js.PublishMsgAsync(&nats.Msg{Subject: "$KV." + cache.Bucket() + "." + k, Data: v.entry})
	}
	settle := func(fs ...jetstream.PubAckFuture) error {
		for _, f := range fs {
			select {
			case <-f.Ok():
			case err := <-f.Err():
				return fmt.Errorf("cache put: %w", err)
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		return nil
	}
	var seq uint64
	publish := func(actor, eventType string) error {
		id := "bench/" + task + "/1/" + actor + "/" + eventType
		h := nats.Header{
			subjects.HeaderMsgID:         {id},
			subjects.HeaderContract:      {subjects.ContractVersion},
			subjects.HeaderCESpecVersion: {"1.0"},
			subjects.HeaderCEID:          {id},
			subjects.HeaderCESource:      {"drover/" + r.cfg.Names.Prefix()},
			subjects.HeaderCEType:        {"dev.drover." + eventType},
			subjects.HeaderCETime:        {time.Now().UTC().Format(time.RFC3339Nano)},
			subjects.HeaderCESubject:     {"bench/" + task},
			subjects.HeaderCEContentType: {"application/json"},
		}
		msg := &nats.Msg{Subject: r.auditTo + "bench." + task + "." + actor + "." + eventType, Header: h, Data: v.event}
		ack, err := r.js.PublishMsg(ctx, msg, jetstream.WithExpectLastSequenceForSubject(seq, r.auditTo+"bench."+task+".>"))
		if err != nil {
			return fmt.Errorf("audit publish %s: %w", id, err)
		}
		seq = ack.Sequence
		return nil
	}

	planned, err := lookup("planner")
	if err != nil {
		return err
	}
	rev, err := state.Create(ctx, key, v.first)
	if err != nil {
		return fmt.Errorf("state create %s: %w", key, err)
	}
	if err := settle(planned); err != nil {
		return err
	}
	flushed := make(chan error, 1)
	go func() {
		err := publish("system", string(subjects.EventTaskAccepted))
		if err == nil {
			err = publish("planner", string(subjects.EventPlannerDecision))
		}
		flushed <- err
	}()
	changed, err := lookup("implementer")
	var judged jetstream.PubAckFuture
	if err == nil {
		judged, err = lookup("judge")
	}
	if ferr := <-flushed; err == nil {
		err = ferr
	}
	if err != nil {
		return err
	}
	if _, err := state.Update(ctx, key, v.final, rev); err != nil {
		return fmt.Errorf("state update %s: %w", key, err)
	}
	if err := settle(changed, judged); err != nil {
		return err
	}
	for _, ev := range []struct{ actor, eventType string }{
		{"implementer", string(subjects.EventImplementerChange)},
		{"judge", string(subjects.EventJudgeVerdict)},
		{"system", string(subjects.EventTaskCompleted)},
	} {
		if err := publish(ev.actor, ev.eventType); err != nil {
			return err
		}
	}
	return nil
}
