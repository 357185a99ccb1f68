package bench

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
// a pool of the same size.
func runFloor(ctx context.Context, cfg Config, url string) (Phase, error) {
	return newRaw(cfg, "floor", "floor", 1, floorWork).run(ctx, url)
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

func floorWork(ctx context.Context, r *raw, i int) error {
	id := strconv.Itoa(i)
	key := "t" + id
	if _, err := r.kv[0].Get(ctx, key); err != nil && !errors.Is(err, jetstream.ErrKeyNotFound) {
		return fmt.Errorf("kv get: %w", err)
	}
	if _, err := r.kv[0].Put(ctx, key, []byte(`{"state":"completed","stage":"done","attempt":1}`)); err != nil {
		return fmt.Errorf("kv put: %w", err)
	}
	body, _ := json.Marshal(floorEvent{EventID: "floor/" + id, EventType: "task_completed", Workflow: "floor", Task: key,
		Actor: "system", Timestamp: time.Now().UTC(), Reasoning: floorReasoning, Status: "success"})
	ev := &nats.Msg{Subject: r.auditTo + key, Header: nats.Header{}, Data: body}
	ev.Header.Set(subjects.HeaderMsgID, "floor/"+id)
	if _, err := r.js.PublishMsg(ctx, ev); err != nil {
		return fmt.Errorf("audit publish: %w", err)
	}
	return nil
}
