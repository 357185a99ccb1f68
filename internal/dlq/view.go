package dlq

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// View is an entry as JSON, the form `drover dlq ls --json` and
// `drover dlq show --json` print. Headers and the body are set only in a
// full view: a body that is JSON as it is, other UTF-8 text as a JSON
// string, other bytes in body_base64.
type View struct {
	Seq        uint64              `json:"seq"`
	Time       time.Time           `json:"time"`
	Queue      string              `json:"queue"`
	Reason     string              `json:"reason"`
	Error      string              `json:"error"`
	Workflow   string              `json:"workflow"`
	Task       string              `json:"task"`
	StreamSeq  uint64              `json:"stream_seq"`
	Deliveries int                 `json:"deliveries"`
	Bytes      int                 `json:"bytes"`
	Headers    map[string][]string `json:"headers,omitempty"`
	Body       json.RawMessage     `json:"body,omitempty"`
	BodyBase64 []byte              `json:"body_base64,omitempty"`
}

// ViewOf returns e's view; full adds the headers and the body.
func ViewOf(e Entry, full bool) View {
	v := View{Seq: e.Seq, Time: e.Time.UTC(), Queue: e.Queue, Reason: e.Reason, Error: e.Error, Workflow: e.Workflow,
		Task: e.Task, StreamSeq: e.StreamSeq, Deliveries: e.Deliveries, Bytes: len(e.Body)}
	if !full {
		return v
	}
	v.Headers = e.Header
	switch {
	case len(e.Body) > 0 && json.Valid(e.Body):
		v.Body = e.Body
	case utf8.Valid(e.Body):
		v.Body, _ = json.Marshal(string(e.Body)) // a valid string always encodes
	default:
		v.BodyBase64 = e.Body
	}
	return v
}

// Skipped is told why Select leaves an entry out.
type Skipped func(e Entry, why error)

// Select lists the entries matching f that a redrive to workflow to ("":
// the default naming of RedriveOptions) can take. It leaves out, telling
// skip, each entry that cannot be redriven, and each entry superseded by a
// newer one that would become the same task; the newer one takes the older
// one's place in the order. A filter on a reason that cannot be redriven is
// an error.
func Select(ctx context.Context, js jetstream.JetStream, names subjects.Names, f Filter, to string, skip Skipped) ([]Entry, error) {
	if f.Reason != "" {
		if err := Redrivable(f.Reason); err != nil {
			return nil, fmt.Errorf("dlq: reason %s: %w", f.Reason, err)
		}
	}
	var out []Entry
	at := map[[2]string]int{}
	err := List(ctx, js, names, f, func(e Entry) error {
		if err := Redrivable(e.Reason); err != nil {
			skip(e, err)
			return nil
		}
		target := to
		if target == "" {
			target = BaseWorkflow(e.Workflow)
		}
		k := [2]string{target, e.Task}
		if i, ok := at[k]; ok {
			skip(out[i], fmt.Errorf("superseded by entry %d, a newer request for task %s", e.Seq, e.Task))
			out[i] = e
			return nil
		}
		at[k] = len(out)
		out = append(out, e)
		return nil
	})
	return out, err
}
