package consumers

// Metrics receives the task consumer's events. The ops package implements
// it with Prometheus collectors; nil in Config means none are recorded.
type Metrics interface {
	// PoolSize reports the size of the pool the consumer fetches for.
	PoolSize(n int)
	// InFlight moves the number of tasks running on the pool by delta.
	InFlight(delta int)
	// Redelivered counts a delivery with NumDelivered > 1.
	Redelivered()
	// Settled counts what was done with a message: "ack", "term", "nak"
	// or "abandon" (nothing sent; the claim was lost).
	Settled(action string)
	// Heartbeat counts an in-progress ack sent for a running task.
	Heartbeat()
	// Panicked counts a message whose handling panicked.
	Panicked()
}

type nopMetrics struct{}

func (nopMetrics) PoolSize(int)   {}
func (nopMetrics) InFlight(int)   {}
func (nopMetrics) Redelivered()   {}
func (nopMetrics) Settled(string) {}
func (nopMetrics) Heartbeat()     {}
func (nopMetrics) Panicked()      {}
