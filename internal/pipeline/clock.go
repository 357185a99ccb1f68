package pipeline

// sinceStart is the task's duration so far in milliseconds, for an event's
// duration_ms: from the state's started_at (written by whichever worker
// first claimed the task) to this worker's clock. Wall clocks differ
// between workers and jump (a step of NTP, a virtual machine resumed), so a
// negative difference is written as 0 rather than as a nonsense duration.
func (p *Pipeline) sinceStart(t *taskRun) int64 {
	return max(0, p.cfg.Now().Sub(t.st.StartedAt).Milliseconds())
}
