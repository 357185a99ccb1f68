package mergequeue

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/streamread"
)

// Kinds of LogRecord.
const (
	LogStart = "start" // a merger took the target's lease
	LogBatch = "batch" // a batch was pushed
	LogEnd   = "end"   // a merger let the lease go
	// LogPush (landed.go): a batch about to be pushed.
)

// LogRecord is one line of the merge log.
type LogRecord struct {
	Kind   string    `json:"kind"`
	Target string    `json:"target"`
	Holder string    `json:"holder"`
	Lease  uint64    `json:"lease"` // the lease key's revision when taken
	At     time.Time `json:"at"`
	// Batch and push records only.
	Before  string   `json:"before,omitempty"`
	Commit  string   `json:"commit,omitempty"`
	Merged  []string `json:"merged,omitempty"`  // entry keys
	Skipped []string `json:"skipped,omitempty"` // already on the target
	Back    []string `json:"back,omitempty"`    // sent back to the implementer
	Dropped []string `json:"dropped,omitempty"` // their tasks no longer wait (cancelled, finished)
}

func (m *Merger) record(ctx context.Context, r LogRecord) {
	r.Target, r.Holder, r.At = m.cfg.Target, m.holder, time.Now().UTC()
	data, _ := json.Marshal(r)
	if _, err := m.js.Publish(context.WithoutCancel(ctx), m.names.LogSubject(m.cfg.Target), data); err != nil {
		m.log.Warn("merge log", "kind", r.Kind, "err", err)
	}
}

// ReadLog returns target's merge log in order.
func ReadLog(ctx context.Context, js jetstream.JetStream, n Names, target string) ([]LogRecord, error) {
	s, err := js.Stream(ctx, n.LogStream())
	if err != nil {
		return nil, err
	}
	info, err := s.Info(ctx, jetstream.WithSubjectFilter(n.LogSubject(target)))
	if err != nil {
		return nil, err
	}
	total := int(info.State.Subjects[n.LogSubject(target)])
	if total == 0 {
		return nil, nil
	}
	// One ordered consumer read as a stream of messages, deleted after:
	// Next on an ordered consumer replaces it with a new one per call.
	c, err := streamread.OrderedConsumer(ctx, js, n.LogStream(), jetstream.OrderedConsumerConfig{FilterSubjects: []string{n.LogSubject(target)}})
	if err != nil {
		return nil, err
	}
	defer streamread.DeleteConsumer(ctx, s, c)
	it, err := c.Messages()
	if err != nil {
		return nil, fmt.Errorf("mergequeue: log: %w", err)
	}
	defer it.Stop()
	out := make([]LogRecord, 0, total)
	for len(out) < total {
		rctx, cancel := context.WithTimeout(ctx, logReadWait)
		msg, err := it.Next(jetstream.NextContext(rctx))
		cancel()
		if err != nil {
			return out, fmt.Errorf("mergequeue: log: %w", err)
		}
		var r LogRecord
		if err := json.Unmarshal(msg.Data(), &r); err != nil {
			return out, fmt.Errorf("mergequeue: log: %w", err)
		}
		out = append(out, r)
	}
	return out, nil
}

// logReadWait bounds the wait for one record of a merge log the stream
// said it holds.
const logReadWait = 5 * time.Second
