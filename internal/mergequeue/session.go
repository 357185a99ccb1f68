package mergequeue

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// session merges batches while l holds, then records its end and lets l go.
func (m *Merger) session(ctx context.Context, l *lease) {
	m.sessions.Add(1)
	m.record(ctx, LogRecord{Kind: LogStart, Lease: l.rev})
	m.log.Info("merger session started", "holder", m.holder)
	sctx, cancel := context.WithCancelCause(ctx)
	var wg sync.WaitGroup
	var mu sync.Mutex // orders renewals
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := time.NewTicker(m.cfg.LeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-sctx.Done():
				return
			case <-t.C:
				mu.Lock()
				err := l.renew(sctx)
				mu.Unlock()
				if err != nil {
					cancel(err)
					return
				}
			}
		}
	}()
	renew := func() error {
		mu.Lock()
		defer mu.Unlock()
		return l.renew(sctx)
	}
	// Read while the lease is renewed: the log may be long.
	landed, err := m.loadLanded(sctx)
	if err != nil {
		// Without the log a rebased entry delivered again could be merged
		// twice: end the session and try again later.
		m.log.Warn("merger session ends at once", "err", err)
		cancel(err)
	}
	m.landed = landed
	for sctx.Err() == nil {
		batch, err := m.cons.Fetch(m.cfg.Batch, jetstream.FetchMaxWait(m.poll()))
		if err != nil {
			if sctx.Err() == nil {
				m.log.Warn("fetch", "err", err)
			}
			break
		}
		var msgs []jetstream.Msg
		for msg := range batch.Messages() {
			msgs = append(msgs, msg)
		}
		if len(msgs) > 0 {
			if err := m.batch(sctx, msgs, renew); err != nil && sctx.Err() == nil {
				m.log.Warn("batch", "err", err)
			}
		}
	}
	lost := errors.Is(context.Cause(sctx), ErrLeaseLost)
	cancel(nil)
	wg.Wait()
	m.record(ctx, LogRecord{Kind: LogEnd, Lease: l.rev})
	if !lost {
		l.release(context.WithoutCancel(ctx))
	}
	m.log.Info("merger session ended", "holder", m.holder, "lease_lost", lost)
}

// keepInProgress extends the ack wait of msgs until stop is called.
func (m *Merger) keepInProgress(ctx context.Context, msgs []jetstream.Msg) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(m.cfg.LeaseTTL / 3)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				for _, msg := range msgs {
					_ = msg.InProgress()
				}
			}
		}
	}()
	return func() { cancel(); <-done }
}
