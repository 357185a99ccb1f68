package worker

import (
	"errors"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/consumers"
)

// ErrStoreFull is the readiness reason while the server refuses the
// worker's writes for want of storage (JetStream's "insufficient
// resources": max_file_store or an account limit reached). Deliveries are
// held and retried in place meanwhile, spending none of their tries.
var ErrStoreFull = errors.New("storage full: the server refuses writes (insufficient resources); tasks are held until space is freed")

// storeFullFor is how long after the last refused write the store still
// counts as full, unless a write went through since.
const storeFullFor = 10 * time.Second

// insufficientResources is JetStream's error code for a write refused for
// want of storage.
const insufficientResources = 10023

// StoreMetrics is what a worker's Metrics may also implement to report a
// full store (ops.Metrics does).
type StoreMetrics interface {
	StoreFull(full bool)
}

// storeWatch follows the outcomes of deliveries: a write refused for want
// of storage marks the store full, a delivery that acked or terminated
// (its writes stored) clears it.
type storeWatch struct {
	refused atomic.Int64 // unix nanoseconds of the last refusal
	stored  atomic.Int64 // unix nanoseconds of the last delivery settled after writing
}

// observe takes one delivery's outcome.
func (s *storeWatch) observe(out consumers.Outcome, now time.Time) {
	switch {
	case out.Action == consumers.Nak && out.RetryInPlace && storeFull(out.Err):
		s.refused.Store(now.UnixNano())
	case out.Action == consumers.Ack || out.Action == consumers.Term:
		s.stored.Store(now.UnixNano())
	}
}

// full reports whether the store counts as full at now.
func (s *storeWatch) full(now time.Time) bool {
	r := s.refused.Load()
	return r != 0 && r > s.stored.Load() && now.UnixNano()-r < int64(storeFullFor)
}

// storeFull reports whether err is a write refused for want of storage.
func storeFull(err error) bool {
	var api *jetstream.APIError
	return errors.As(err, &api) && api.ErrorCode == insufficientResources
}

// checkStore returns ErrStoreFull while the store is full, logging and
// setting the metric when that changes.
func (w *Worker) checkStore() error {
	full := w.store.full(time.Now())
	if m, ok := w.cfg.Metrics.(StoreMetrics); ok {
		m.StoreFull(full)
	}
	if w.storeWasFull.Swap(full) != full {
		if full {
			w.cfg.Log.Error("storage full: the server refuses writes; tasks are held until space is freed", "err", ErrStoreFull)
		} else {
			w.cfg.Log.Info("storage: writes are stored again")
		}
	}
	if full {
		return ErrStoreFull
	}
	return nil
}
