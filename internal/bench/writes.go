package bench

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// StreamWrites is how many messages one stream stored during a phase.
type StreamWrites struct {
	Stream string `json:"stream"`
	Writes uint64 `json:"writes"`
}

// Writes counts the messages stored during the Drover phase: the growth of
// each stream's last sequence. A stored write is one message appended to a
// stream, whatever later removes it (an ack on the work-queue task stream,
// a newer revision of a KV key); acks and consumer state are not counted.
type Writes struct {
	Total   uint64         `json:"total"`
	Request uint64         `json:"request"` // the task stream's share: the requests themselves
	Streams []StreamWrites `json:"streams"`
	// PerTask includes the request; PerTaskExcl leaves it out and is what
	// the pipeline's "eleven stored writes" counts.
	PerTask     float64 `json:"per_task"`
	PerTaskExcl float64 `json:"per_task_excluding_request"`
}

// writeStreams are the streams whose writes count: every stream and
// bucket of the contract, KV buckets and the object store under their
// stream names.
func writeStreams(n subjects.Names) []string {
	return []string{
		n.TasksStream(), n.AuditStream(), n.DLQStream(),
		"KV_" + n.StateBucket(), "KV_" + n.CacheBucket(), "OBJ_" + n.BlobStore(),
	}
}

// LastSeqs returns each stream's last sequence (0 for a missing stream).
func LastSeqs(ctx context.Context, js jetstream.JetStream, streams []string) ([]uint64, error) {
	out := make([]uint64, len(streams))
	for i, name := range streams {
		s, err := js.Stream(ctx, name)
		if errors.Is(err, jetstream.ErrStreamNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("bench: stream %s: %w", name, err)
		}
		out[i] = s.CachedInfo().State.LastSeq
	}
	return out, nil
}

// countWrites builds Writes from the last sequences before and after n
// tasks; the first stream is the task stream.
func countWrites(streams []string, before, after []uint64, n int) Writes {
	var w Writes
	for i, name := range streams {
		d := after[i] - before[i]
		w.Streams = append(w.Streams, StreamWrites{Stream: name, Writes: d})
		w.Total += d
	}
	w.Request = w.Streams[0].Writes
	if n > 0 {
		w.PerTask = float64(w.Total) / float64(n)
		w.PerTaskExcl = float64(w.Total-w.Request) / float64(n)
	}
	return w
}
