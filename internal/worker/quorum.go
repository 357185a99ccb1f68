package worker

import (
	"context"
	"errors"
	"net/http"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// ErrNoQuorum marks a readiness failure where the server is connected but
// JetStream does not answer for Drover's streams: a cluster that lost its
// majority (or the leaders of the streams), or a server whose JetStream is
// down. Nothing can be stored until it is back, so the worker acks nothing
// and writes no terminal event meanwhile.
var ErrNoQuorum = errors.New("no quorum: JetStream does not answer for Drover's streams (a cluster that lost its majority or its stream leaders)")

// JetStreamMetrics is what a worker's Metrics may also implement to report
// whether the last JetStream check answered (ops.Metrics does).
type JetStreamMetrics interface {
	JetStreamAvailable(ok bool)
}

// noQuorum wraps err in ErrNoQuorum when it says JetStream did not answer
// (a timeout, no responders, or the server's "temporarily unavailable"),
// and returns other errors (a deleted stream, a permission) as they are.
func noQuorum(err error) error {
	if err == nil || !unanswered(err) {
		return err
	}
	return noQuorumError{err}
}

// noQuorumError is ErrNoQuorum with its cause. It unwraps to the cause
// only, so /readyz serves ErrNoQuorum's words and logs the cause.
type noQuorumError struct{ cause error }

func (e noQuorumError) Error() string        { return ErrNoQuorum.Error() + ": " + e.cause.Error() }
func (e noQuorumError) Unwrap() error        { return e.cause }
func (e noQuorumError) Is(target error) bool { return target == ErrNoQuorum }

func unanswered(err error) bool {
	for _, e := range []error{context.DeadlineExceeded, nats.ErrTimeout, nats.ErrNoResponders, jetstream.ErrNoStreamResponse} {
		if errors.Is(err, e) {
			return true
		}
	}
	var api *jetstream.APIError
	return errors.As(err, &api) && api.Code == http.StatusServiceUnavailable &&
		api.ErrorCode != jetstream.JSErrCodeJetStreamNotEnabled && api.ErrorCode != jetstream.JSErrCodeJetStreamNotEnabledForAccount
}

// reportJetStream logs when the JetStream check changes between answered
// and not, and sets the metric. The caller holds probeMu.
func (w *Worker) reportJetStream(err error) {
	down := errors.Is(err, ErrNoQuorum)
	if m, ok := w.cfg.Metrics.(JetStreamMetrics); ok {
		m.JetStreamAvailable(!down)
	}
	if down == w.noQuorum {
		return
	}
	w.noQuorum = down
	if down {
		w.cfg.Log.Error("no quorum: JetStream does not answer; nothing is acked or completed until it does", "err", err)
	} else {
		w.cfg.Log.Info("JetStream answers again")
	}
}
