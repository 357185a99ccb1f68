package pool

import "time"

// Runners is how many runners are alive.
func (p *Pool) Runners() int64 { return p.runners.Load() }

// WaitingRunners is how many runners wait for work.
func (p *Pool) WaitingRunners() int64 { return p.waiting.Load() }

// SetIdle sets how long a runner waits for work from its next wait on;
// it may be called while runners wait.
func (p *Pool) SetIdle(d time.Duration) { p.idle.Store(int64(d)) }

// Spawned is how many runners were started.
func (p *Pool) Spawned() int64 { return p.spawned.Load() }
