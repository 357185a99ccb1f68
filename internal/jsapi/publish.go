// Package jsapi makes the JetStream requests a task repeats most at less
// cost than the client library's calls, with their outcomes: the
// synchronous publish (its audit events and state writes, seven in a cold
// task), whose acknowledgement is read without reflection in the shapes
// the server writes it (anything else is decoded as the library decodes
// it), and a key-value bucket's reads and writes (Bucket: four reads in a
// cold task), a read being one direct get.
package jsapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Ack is what the stream acknowledged: the message's sequence, and
// whether it was a duplicate of one already stored (its Nats-Msg-Id seen
// inside the duplicate window), in which case Seq is the stored one's.
type Ack struct {
	Seq       uint64
	Duplicate bool
}

// Publish publishes msg (its expectations already in its headers) and
// waits for the stream to acknowledge it, as jetstream.JetStream's
// PublishMsg does without options:
//   - a context without a deadline is bounded by js's default timeout;
//   - no responders (no stream, or a stream electing its leader) is tried
//     again jetstream.DefaultPubRetryAttempts times,
//     jetstream.DefaultPubRetryWait apart, then is
//     jetstream.ErrNoStreamResponse;
//   - a refusal is the stream's *jetstream.APIError, wrapped as the library
//     wraps it, so errors.Is and errors.As match it as they match the
//     library's (a wrong last sequence is jetstream.ErrKeyExists);
//   - an answer that is not an acknowledgement is
//     jetstream.ErrInvalidJSAck.
func Publish(ctx context.Context, js jetstream.JetStream, msg *nats.Msg) (Ack, error) {
	ctx, cancel := bounded(ctx, js)
	defer cancel()
	nc := js.Conn()
	resp, err := nc.RequestMsgWithContext(ctx, msg)
	for try := 0; errors.Is(err, nats.ErrNoResponders) && try < jetstream.DefaultPubRetryAttempts; try++ {
		if werr := wait(ctx, jetstream.DefaultPubRetryWait); werr != nil {
			return Ack{}, werr
		}
		resp, err = nc.RequestMsgWithContext(ctx, msg)
	}
	if err != nil {
		if errors.Is(err, nats.ErrNoResponders) {
			return Ack{}, jetstream.ErrNoStreamResponse
		}
		return Ack{}, err
	}
	if a, ok := parseAck(resp.Data); ok {
		return a, nil
	}
	return decodeAck(resp.Data)
}

// APIPrefix is the prefix of js's JetStream API subjects, with its
// trailing dot: its domain's, its own API prefix, or the default.
func APIPrefix(js jetstream.JetStream) string {
	o := js.Options()
	switch {
	case o.Domain != "":
		return "$JS." + o.Domain + ".API."
	case o.APIPrefix != "":
		return strings.TrimSuffix(o.APIPrefix, ".") + "."
	}
	return jetstream.DefaultAPIPrefix
}

// bounded is ctx, bounded by js's default timeout when it has no deadline
// of its own, as the library bounds its calls.
func bounded(ctx context.Context, js jetstream.JetStream) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, js.Options().DefaultTimeout)
}

// wait returns after d, or with ctx's error if it ends first.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// decodeAck decodes an answer parseAck does not read (a refusal, or a
// shape the server may write that Drover's streams do not make) as the
// library does: into the library's own PubAck beside the response's type
// and error, so a field of the wrong type fails it as it fails the
// library's.
func decodeAck(data []byte) (Ack, error) {
	var r struct {
		Type  string              `json:"type"`
		Error *jetstream.APIError `json:"error"`
		*jetstream.PubAck
	}
	if err := json.Unmarshal(data, &r); err != nil {
		return Ack{}, jetstream.ErrInvalidJSAck
	}
	if r.Error != nil {
		return Ack{}, fmt.Errorf("nats: %w", r.Error)
	}
	if r.PubAck == nil || r.Stream == "" {
		return Ack{}, jetstream.ErrInvalidJSAck
	}
	return Ack{Seq: r.Sequence, Duplicate: r.Duplicate}, nil
}
