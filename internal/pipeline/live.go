package pipeline

import (
	"encoding/json"
	"sync"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Bounds of a role run's live activity (subjects.LiveLine).
const (
	// liveMaxLines is how many lines one role run publishes; the rest are
	// counted as dropped.
	liveMaxLines = 5000
	// liveRate and liveBurst bound the lines a role run publishes per
	// second: a token bucket refilled at liveRate a second, holding at
	// most liveBurst.
	liveRate  = 50
	liveBurst = 200
	// liveBuffer is how many lines wait for the publisher; a line that
	// finds it full is dropped, so a slow broker never holds up the role.
	liveBuffer = 256
)

// LiveMetrics is implemented by a Metrics that counts live activity
// lines (ops.Metrics: drover_live_lines_total).
type LiveMetrics interface {
	// LiveLine counts one line: published (handed to the broker) or
	// dropped.
	LiveLine(published bool)
}

// liveCount counts one line in the pipeline and in its metrics.
func (p *Pipeline) liveCount(published bool) {
	if published {
		p.live.published.Add(1)
	} else {
		p.live.dropped.Add(1)
	}
	if lm, ok := p.d.Metrics.(LiveMetrics); ok {
		lm.LiveLine(published)
	}
}

// liveStats counts the live lines of every role run of one pipeline.
type liveStats struct {
	published atomic.Uint64
	dropped   atomic.Uint64
}

// LiveDropped is how many live activity lines this pipeline dropped:
// over a role run's bounds, or because the publisher fell behind.
func (p *Pipeline) LiveDropped() uint64 { return p.live.dropped.Load() }

// LivePublished is how many live activity lines this pipeline handed to
// the broker.
func (p *Pipeline) LivePublished() uint64 { return p.live.published.Load() }

// liveFeed is one role run's live activity: the runner's Activity calls
// become subjects.LiveLine messages on the task's live subject, bounded
// (liveMaxLines, liveRate) and published by a goroutine of their own, so
// the runner never waits for the broker.
type liveFeed struct {
	p       *Pipeline
	subject string
	line    subjects.LiveLine // the fields every line shares

	mu      sync.Mutex
	ch      chan subjects.LiveLine
	closed  bool
	seq     uint64
	dropped uint64
	tokens  float64
	last    time.Time
}

// startLive returns the feed of req's run for t; nil when the pipeline
// has no JetStream to publish to. Its buffer and publisher start with the
// first line, so a role that says nothing (the sim, an openai call) costs
// neither. Close it when the runner returns.
func (p *Pipeline) startLive(t *taskRun, req runner.Request) *liveFeed {
	if p.d.JS == nil {
		return nil
	}
	f := &liveFeed{
		p:       p,
		subject: p.d.Names.LiveSubject(t.req.Workflow, t.req.ID),
		line: subjects.LiveLine{Workflow: t.req.Workflow, Task: t.req.ID, Role: req.Role,
			Attempt: req.Attempt, Try: req.Try, Worker: p.cfg.Worker},
		tokens: liveBurst,
		last:   p.cfg.Now(),
	}
	return f
}

// emit is the runner's Activity callback: it never blocks.
func (f *liveFeed) emit(a runner.Activity) {
	now := f.p.cfg.Now()
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.closed {
		return // a runner still talking after its role returned
	}
	f.tokens = min(liveBurst, f.tokens+now.Sub(f.last).Seconds()*liveRate)
	f.last = now
	if f.seq+f.dropped >= liveMaxLines || f.tokens < 1 {
		f.drop()
		return
	}
	if f.ch == nil {
		f.ch = make(chan subjects.LiveLine, liveBuffer)
		go f.publish(f.ch)
	}
	l := f.line
	l.Seq, l.Kind, l.Tool, l.Text, l.Dropped, l.Time = f.seq+1, a.Kind, runner.LiveText(a.Tool), runner.LiveText(a.Text), f.dropped, now.UTC()
	select {
	case f.ch <- l:
		f.seq++
		f.tokens--
	default:
		f.drop()
	}
}

func (f *liveFeed) drop() {
	f.dropped++
	f.p.liveCount(false)
}

// close ends the feed: the lines still buffered are published, and later
// Activity calls are ignored. A nil feed is a no-op.
func (f *liveFeed) close() {
	if f == nil {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if !f.closed {
		f.closed = true
		if f.ch != nil {
			close(f.ch)
		}
	}
}

// activity is the feed's Activity callback, nil for a nil feed.
func (f *liveFeed) activity() func(runner.Activity) {
	if f == nil {
		return nil
	}
	return f.emit
}

// publish sends each line without waiting for its acknowledgement: the
// stream is a window on a running role, and a lost line costs nothing
// the audit stream does not keep.
func (f *liveFeed) publish(ch <-chan subjects.LiveLine) {
	for l := range ch {
		b, err := json.Marshal(l)
		if err != nil {
			continue
		}
		_, err = f.p.d.JS.PublishAsync(f.subject, b)
		f.p.liveCount(err == nil)
	}
}
