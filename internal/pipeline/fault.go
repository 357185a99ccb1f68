package pipeline

import (
	"context"
	"errors"
	"net/http"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// serverFault reports whether err is the server's refusal or silence, not
// the task's: storage or limits exhausted ("insufficient resources"), a
// cluster without quorum ("temporarily unavailable", no responders, a
// timeout). Such a delivery is held and tried again rather than naked, so
// an outage does not use up the task's deliveries (and then fail to write
// even its DLQ entry). The caller's own context ending is not one.
func serverFault(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	for _, e := range []error{context.DeadlineExceeded, nats.ErrTimeout, nats.ErrNoResponders, jetstream.ErrNoStreamResponse} {
		if errors.Is(err, e) {
			return true
		}
	}
	var api *jetstream.APIError
	return errors.As(err, &api) && api.Code == http.StatusServiceUnavailable
}
