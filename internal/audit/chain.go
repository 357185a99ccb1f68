package audit

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// The hash chain: every audit event carries, in its Drover-Prev header, the
// link of the previous event on its task's subjects (the task's events and
// the rejections of other requests for the task, in stream order), empty on
// the first. A link covers the event's subject, its own Drover-Prev and its
// body, so changing any stored event other than a task's last breaks the
// link of the event after it, and verify names it. A task's last event is
// covered by checkpoints of the stream's tail (Checkpoint).

// Link is the link of a stored event: the SHA-256 of its subject, its
// Drover-Prev and its body, each ended by a newline (the body by nothing).
func Link(subject, prev string, body []byte) [sha256.Size]byte {
	h := sha256.New()
	h.Write([]byte(subject))
	h.Write([]byte{'\n'})
	h.Write([]byte(prev))
	h.Write([]byte{'\n'})
	h.Write(body)
	var out [sha256.Size]byte
	h.Sum(out[:0])
	return out
}

// LinkHex is Link in hex, as Drover-Prev carries it.
func LinkHex(subject, prev string, body []byte) string {
	l := Link(subject, prev, body)
	return hex.EncodeToString(l[:])
}

// maxChainHeads bounds the links a Publisher remembers; past it, it
// forgets them all and reads the previous event when it needs it.
const maxChainHeads = 4096

// chainHead is the last event a Publisher stored on a task's subjects.
type chainHead struct {
	seq  uint64
	link string
}

// heads remembers, per task filter, the last event this Publisher stored,
// so a task's next event needs no read.
type heads struct {
	mu     sync.Mutex
	m      map[string]chainHead
	stream jetstream.Stream
}

func (h *heads) get(key string, seq uint64) (string, bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	c, ok := h.m[key]
	return c.link, ok && c.seq == seq
}

func (h *heads) put(key string, seq uint64, link string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	switch {
	case h.m == nil:
		h.m = make(map[string]chainHead, 64)
	case len(h.m) >= maxChainHeads:
		clear(h.m) // keeps its table: no growing it again from 64 entries
	}
	h.m[key] = chainHead{seq: seq, link: link}
}

// auditStream is the audit stream's handle, looked up once.
func (p *Publisher) auditStream(ctx context.Context) (jetstream.Stream, error) {
	p.heads.mu.Lock()
	s := p.heads.stream
	p.heads.mu.Unlock()
	if s != nil {
		return s, nil
	}
	s, err := p.js.Stream(ctx, p.names.AuditStream())
	if err != nil {
		return nil, fmt.Errorf("audit: stream %s: %w", p.names.AuditStream(), err)
	}
	p.heads.mu.Lock()
	p.heads.stream = s
	p.heads.mu.Unlock()
	return s, nil
}

// prevOf is the link of the event at seq on the task filter key ("" for
// seq 0): remembered, or read from the stream.
func (p *Publisher) prevOf(ctx context.Context, key string, seq uint64) (string, error) {
	if seq == 0 {
		return "", nil
	}
	if l, ok := p.heads.get(key, seq); ok {
		return l, nil
	}
	s, err := p.auditStream(ctx)
	if err != nil {
		return "", err
	}
	m, err := s.GetMsg(ctx, seq)
	if err != nil {
		return "", fmt.Errorf("audit: read event %d for its link: %w", seq, err)
	}
	return LinkHex(m.Subject, m.Header.Get(subjects.HeaderPrev), m.Data), nil
}

// lastOf is the sequence and link of the last event on the task filter key
// (0 and "" when there is none).
func (p *Publisher) lastOf(ctx context.Context, key string) (uint64, string, error) {
	s, err := p.auditStream(ctx)
	if err != nil {
		return 0, "", err
	}
	m, err := s.GetLastMsgForSubject(ctx, key)
	if errors.Is(err, jetstream.ErrMsgNotFound) {
		return 0, "", nil
	}
	if err != nil {
		return 0, "", fmt.Errorf("audit: last event of %s: %w", key, err)
	}
	return m.Sequence, LinkHex(m.Subject, m.Header.Get(subjects.HeaderPrev), m.Data), nil
}
