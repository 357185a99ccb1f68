package consumers

import (
	"context"
	"time"
)

// watchdog reads the consumer's state every interval. It follows the
// consumer's settings (a worker started with --reconcile-consumer may have
// changed them), and it notices a queue with work that this consumer does
// not receive: when no message arrived in an interval while the pool had
// free slots,
//   - messages pending but none delivered, under max ack pending: the pull
//     has stalled (a lost consumer, a leader change). The consumer is
//     re-ensured, which recreates it if it is gone.
//   - max ack pending reached: the window is held by tasks running on
//     other workers (a role's retry leaves the window as a scheduled
//     message; only the fallback nak with delay counts as pending). That is
//     logged with what to change.
func (c *TaskConsumer) watchdog(ctx context.Context, interval time.Duration) {
	if interval <= 0 {
		return
	}
	tick := time.NewTicker(interval)
	defer tick.Stop()
	seen := c.stats.fetched.Load()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		now := c.stats.fetched.Load()
		// Slots a pending fetch holds are free for this purpose: only
		// running tasks make a quiet queue expected.
		st := c.deps.Pool.Stats()
		idle := now == seen && st.InFlight < int64(st.Size)
		seen = now
		ictx, cancel := context.WithTimeout(ctx, interval)
		info, err := (*c.cons.Load()).Info(ictx)
		cancel()
		if err != nil {
			if idle {
				c.log.Warn("watchdog: consumer info failed; re-ensuring the consumer", "err", err)
				c.reensure(ctx)
			}
			continue
		}
		c.follow(info.Config)
		if !idle {
			continue
		}
		switch {
		case info.NumPending == 0:
		case info.Config.MaxAckPending > 0 && info.NumAckPending >= info.Config.MaxAckPending:
			c.log.Warn("watchdog: max ack pending reached; new tasks wait until running ones settle (raise --max-ack-pending to cover the pools of all workers)",
				"pending", info.NumPending, "ack_pending", info.NumAckPending, "max_ack_pending", info.Config.MaxAckPending)
		default:
			c.stats.stalls.Add(1)
			c.log.Warn("watchdog: tasks pending but none delivered; re-ensuring the consumer",
				"pending", info.NumPending, "ack_pending", info.NumAckPending, "idle_for", interval)
			c.reensure(ctx)
		}
	}
}

func (c *TaskConsumer) reensure(ctx context.Context) {
	cons, err := c.deps.Ensure(ctx)
	if err != nil {
		c.log.Warn("watchdog: could not re-ensure the consumer", "err", err)
		return
	}
	c.use(cons)
}
