package workspace

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/droverhq/drover/subjects"
)

// Backoff of a push the remote did not answer.
const (
	pushBackoffMin = 100 * time.Millisecond
	pushBackoffMax = 10 * time.Second
	// closeFlush bounds the flush of queued pushes at Close.
	closeFlush = 10 * time.Second
)

// Push queues head for the branch on PushRemote and waits: nil once the ref
// is pushed (or already there), ErrPushRejected wrapping the remote's message
// when the remote refuses it, ctx's error when ctx ends first. A remote that
// cannot be reached is retried with backoff for as long as ctx lives. Pushes
// are batched: up to PushBatch refspecs per git push, waiting up to PushDelay
// for more to join. Pushes are never forced blindly (see PushLease).
func (m *Manager) Push(ctx context.Context, branch, head string) error {
	return m.PushLease(ctx, branch, head)
}

// PushLease is Push for a branch Drover may have pushed for this task
// before (a redelivery after a crash): leases are the heads Drover recorded
// for it, oldest first, and the branch is updated if the remote holds
// exactly one of them, fast-forward or not (tried from the newest); a
// branch the remote does not have is pushed as by Push. A branch someone
// else moved is refused, as by Push.
func (m *Manager) PushLease(ctx context.Context, branch, head string, leases ...string) error {
	if err := subjects.ValidBranch(branch); err != nil {
		return fmt.Errorf("workspace: %w", err)
	}
	if !IsSHA(head) {
		return fmt.Errorf("workspace: head %.80q is not a commit id", head)
	}
	if err := m.refuseProtected(branch); err != nil {
		return err
	}
	var lease []string
	for _, l := range leases {
		if !IsSHA(l) {
			return fmt.Errorf("workspace: lease %.80q is not a commit id", l)
		}
		if l != head {
			lease = append(lease, l)
		}
	}
	r := &pushReq{ctx: ctx, branch: branch, head: head, lease: lease, done: make(chan error, 1)}
	if err := m.pusher.enqueue(r); err != nil {
		return err
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

type pushReq struct {
	ctx          context.Context
	branch, head string
	lease        []string // the remote values the update may be leased on, the last tried first
	solo         bool     // push alone: its batch was refused as a whole
	done         chan error
}

// pusher is the background batcher of pushes.
type pusher struct {
	m       *Manager
	in      chan *pushReq
	quit    chan struct{}
	stopped chan struct{}
	once    sync.Once
	mu      sync.Mutex
	started bool
}

func newPusher(m *Manager) *pusher {
	return &pusher{m: m, in: make(chan *pushReq), quit: make(chan struct{}), stopped: make(chan struct{})}
}

func (p *pusher) start() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.started {
		p.started = true
		go p.loop()
	}
}

func (p *pusher) stop() {
	p.once.Do(func() { close(p.quit) })
	p.mu.Lock()
	started := p.started
	p.mu.Unlock()
	if started {
		<-p.stopped
	}
}

func (p *pusher) enqueue(r *pushReq) error {
	select {
	case p.in <- r:
		return nil
	case <-p.quit:
		return ErrClosed
	case <-r.ctx.Done():
		return r.ctx.Err()
	}
}

func (p *pusher) loop() {
	defer close(p.stopped)
	var pending []*pushReq
	backoff := time.Duration(0)
	for {
		if len(pending) == 0 {
			select {
			case r := <-p.in:
				pending = append(pending, r)
			case <-p.quit:
				return
			}
		}
		// Gather more for PushDelay (or the backoff), until a batch is full;
		// a ref split out of a refused batch goes at once.
		wait := max(p.m.cfg.PushDelay, backoff)
		if backoff == 0 && pending[0].solo {
			wait = 0
		}
		timer := time.NewTimer(wait)
	gather:
		for wait > 0 && (backoff > 0 || countPushable(pending) < p.m.cfg.PushBatch) {
			select {
			case r := <-p.in:
				pending = append(pending, r)
			case <-timer.C:
				break gather
			case <-p.quit:
				timer.Stop()
				p.flush(pending)
				return
			}
		}
		timer.Stop()
		pending = dropDone(pending)
		if len(pending) == 0 {
			continue
		}
		batch, rest := p.takeBatch(pending)
		retry := p.push(context.Background(), batch)
		pending = append(retry, rest...)
		if len(retry) > 0 && !allSolo(retry) {
			backoff = min(max(2*backoff, pushBackoffMin), pushBackoffMax)
			p.m.pushRetries.Add(1)
		} else {
			backoff = 0
		}
	}
}

// flush makes one bounded attempt at what is queued when the Manager closes;
// what is left fails with ErrClosed.
func (p *pusher) flush(pending []*pushReq) {
	ctx, cancel := context.WithTimeout(context.Background(), closeFlush)
	defer cancel()
	for pending = dropDone(pending); len(pending) > 0 && ctx.Err() == nil; {
		batch, rest := p.takeBatch(pending)
		retry := p.push(ctx, batch)
		for _, r := range retry {
			r.done <- ErrClosed
		}
		pending = rest
	}
	for _, r := range pending {
		r.done <- ErrClosed
	}
}

func countPushable(rs []*pushReq) int {
	n := 0
	for _, r := range rs {
		if r.ctx.Err() == nil {
			n++
		}
	}
	return n
}

func allSolo(rs []*pushReq) bool {
	for _, r := range rs {
		if !r.solo {
			return false
		}
	}
	return true
}

func dropDone(rs []*pushReq) []*pushReq {
	out := rs[:0]
	for _, r := range rs {
		if err := r.ctx.Err(); err != nil {
			r.done <- err
			continue
		}
		out = append(out, r)
	}
	return out
}

// takeBatch takes up to PushBatch requests, one per branch; a solo request
// goes alone.
func (p *pusher) takeBatch(pending []*pushReq) (batch, rest []*pushReq) {
	seen := map[string]bool{}
	for _, r := range pending {
		full := len(batch) >= p.m.cfg.PushBatch || (len(batch) > 0 && (r.solo || batch[0].solo))
		if full || seen[r.branch] {
			rest = append(rest, r)
			continue
		}
		seen[r.branch] = true
		batch = append(batch, r)
	}
	return batch, rest
}

// push runs one git push of the batch and answers each request; it returns
// the requests to try again: all of them when the remote did not answer, and
// those refused only because their batch was (a pre-receive hook), marked
// solo.
func (p *pusher) push(ctx context.Context, batch []*pushReq) (retry []*pushReq) {
	m := p.m
	args := []string{"--git-dir", m.mirror, "push", "--porcelain", "--no-verify"}
	for _, r := range batch {
		if n := len(r.lease); n > 0 { // that ref alone; the others stay fast-forward only
			args = append(args, "--force-with-lease=refs/heads/"+r.branch+":"+r.lease[n-1])
		}
	}
	args = append(args, "--end-of-options", m.cfg.PushRemote)
	for _, r := range batch {
		args = append(args, r.head+":refs/heads/"+r.branch)
	}
	m.pushes.Add(1)
	out, err := m.git.run(ctx, gitCall{args: args, limit: 1 << 20})
	status := parsePorcelain(string(out))
	for _, r := range batch {
		st, ok := status["refs/heads/"+r.branch]
		switch {
		case !ok:
			m.log.Warn("push: the remote did not answer for the ref, retrying", "branch", r.branch, "err", err)
			retry = append(retry, r)
		case st.flag != '!':
			m.pushedRefs.Add(1)
			r.done <- nil
		case len(batch) > 1 && !r.solo && batchWide(st.summary):
			r.solo = true
			retry = append(retry, r)
		case len(r.lease) > 0 && strings.Contains(st.summary, "stale info"):
			// The remote does not hold the leased head: an older one, or
			// none (the earlier push never landed), or someone else's,
			// which the plain push at the end refuses.
			r.lease, r.solo = r.lease[:len(r.lease)-1], true
			retry = append(retry, r)
		default:
			r.done <- fmt.Errorf("%w: %s: %s", ErrPushRejected, r.branch, st.summary)
		}
	}
	return retry
}

// batchWide reports whether a refusal concerns the whole push, not the ref.
func batchWide(summary string) bool {
	return strings.Contains(summary, "pre-receive hook declined") || strings.Contains(summary, "atomic")
}

type refStatus struct {
	flag    byte
	summary string
}

// parsePorcelain reads `git push --porcelain` output: per ref a line
// "<flag>\t<from>:<to>\t<summary>".
func parsePorcelain(out string) map[string]refStatus {
	st := map[string]refStatus{}
	for _, line := range strings.Split(out, "\n") {
		f := strings.SplitN(line, "\t", 3)
		if len(f) != 3 || len(f[0]) != 1 {
			continue
		}
		_, to, ok := strings.Cut(f[1], ":")
		if !ok {
			continue
		}
		st[to] = refStatus{flag: f[0][0], summary: strings.TrimSpace(f[2])}
	}
	return st
}
