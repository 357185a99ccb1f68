package benchlab

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// runFloor runs the floor phase: the same number of messages through the
// least per-task work a worker could do with plain JetStream (one KV get
// and one KV put, one audit-like publish with a Nats-Msg-Id, an ack), with
// a pool of the same size, overlapped as a careful hand-written worker
// does: the audit publish is sent asynchronously before the KV get and put
// and waited for only before the ack, so the task is acked only once its
// audit event is stored.
func runFloor(ctx context.Context, cfg Config, url string) (Result, error) {
	return newRaw(cfg, "floor (overlapped)", "floorx", 1, floorWork).run(ctx, url)
}

// floorEvent is an audit-like event of about 600 bytes.
type floorEvent struct {
	EventID   string    `json:"event_id"`
	EventType string    `json:"event_type"`
	Workflow  string    `json:"workflow_id"`
	Task      string    `json:"task_id"`
	Actor     string    `json:"actor"`
	Timestamp time.Time `json:"timestamp"`
	Reasoning string    `json:"reasoning"`
	Status    string    `json:"status"`
}

var floorReasoning = strings.Repeat("the floor does the least a worker can do. ", 10)

// floorState is the floor's KV value.
var floorState = []byte(`{"state":"completed","stage":"done","attempt":1}`)

// floorMsg is task i's audit-like event.
func floorMsg(r *raw, i int) *nats.Msg {
	id := strconv.Itoa(i)
	body, _ := json.Marshal(floorEvent{EventID: "floor/" + id, EventType: "task_completed", Workflow: "floor", Task: "t" + id,
		Actor: "system", Timestamp: time.Now().UTC(), Reasoning: floorReasoning, Status: "success"})
	ev := &nats.Msg{Subject: r.auditTo + "t" + id, Header: nats.Header{}, Data: body}
	ev.Header.Set(subjects.HeaderMsgID, "floor/"+id)
	return ev
}

// floorKV is the floor's KV get and put of task i, timed.
func floorKV(ctx context.Context, r *raw, i int) error {
	key := "t" + strconv.Itoa(i)
	start := time.Now()
	if _, err := r.kv[0].Get(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("kv get: %w", err)
	}
	r.ops.since("kv get", start)
	start = time.Now()
	if _, err := r.kv[0].Put(ctx, key, floorState); err != nil {
		return fmt.Errorf("kv put: %w", err)
	}
	r.ops.since("kv put", start)
	return nil
}

func floorWork(ctx context.Context, r *raw, i int, _ []byte) error {
	start := time.Now()
	f, err := r.js.PublishMsgAsync(floorMsg(r, i))
	if err != nil {
		return fmt.Errorf("audit publish: %w", err)
	}
	kvErr := floorKV(ctx, r, i)
	if err := settle(ctx, f); err != nil {
		return fmt.Errorf("audit publish: %w", err)
	}
	r.ops.overlapped("audit publish (async)", start)
	return kvErr
}

// settle waits for an asynchronous publish's PubAck.
func settle(ctx context.Context, f jetstream.PubAckFuture) error {
	select {
	case <-f.Ok():
		return nil
	case err := <-f.Err():
		return err
	case <-ctx.Done():
		return context.Cause(ctx)
	}
}
