package bench

import (
	"fmt"
	"os"
	"time"
)

// Disk is what the store's disk does for one writer: serial 1 KiB writes,
// each followed by an fsync, in the embedded server's store directory. With
// fsync before ack, a stream stores its messages one after another, each
// synced before the next, so the audit stream's events (five per task)
// cannot be stored faster than AuditFloor for the cached phase's tasks.
type Disk struct {
	// Writes is the distribution of a write and its fsync.
	Writes Dist `json:"writes"`
	// AuditFloor is five such writes per cached task, one after another:
	// the least time the audit stream needs for the cached run's events.
	AuditFloor  time.Duration `json:"-"`
	AuditFloorS float64       `json:"audit_floor_s"`
}

// eventsPerCachedTask is what the contract stores in the audit stream for
// a fully cached one-round task.
const eventsPerCachedTask = 5

// probeDisk times n serial 1 KiB writes, each fsync'd, in a file it
// creates in dir and removes.
func probeDisk(dir string, n, tasks int) (*Disk, error) {
	f, err := os.CreateTemp(dir, "fsync-probe-")
	if err != nil {
		return nil, fmt.Errorf("bench: disk probe: %w", err)
	}
	defer func() { _ = os.Remove(f.Name()) }() // a probe's scratch file; a leftover is harmless
	defer func() { _ = f.Close() }()           // written and synced below; the close adds nothing
	buf := make([]byte, 1024)
	took := make([]time.Duration, n)
	for i := range n {
		start := time.Now()
		if _, err := f.WriteAt(buf, int64(i)*int64(len(buf))); err != nil {
			return nil, fmt.Errorf("bench: disk probe: %w", err)
		}
		if err := f.Sync(); err != nil {
			return nil, fmt.Errorf("bench: disk probe: %w", err)
		}
		took[i] = time.Since(start)
	}
	d := &Disk{Writes: newDist(took)}
	d.AuditFloor = time.Duration(eventsPerCachedTask*tasks) * d.Writes.P50
	d.AuditFloorS = d.AuditFloor.Seconds()
	return d, nil
}
