package console

import (
	"encoding/json"
	"sync"
	"time"
)

// Hub limits.
const (
	// flushEvery is how often the hub sends what gathered to its clients:
	// one SSE message per client per tick, however many events arrived.
	flushEvery = 100 * time.Millisecond
	// maxBatch bounds the items of one message; the rest of a burst is
	// counted in a "lost" item, and the pages that need every item reload.
	maxBatch = 2000
	// clientBuffer is how many messages wait for a slow client before the
	// hub drops it (its page reconnects and resynchronises).
	clientBuffer = 32
	// recentAudit is how many of the latest audit events the hub keeps, for
	// a page to catch up on what arrived between its render and its event
	// stream.
	recentAudit = 2000
)

// hub fans the changes of the state bucket and the audit stream out to the
// browsers' event streams. A client that does not keep up is dropped; it
// never blocks the hub or the other clients.
type hub struct {
	mu      sync.Mutex
	pending []json.RawMessage
	lost    int
	clients map[*client]struct{}
	recent  []auditItem // a ring of the latest audit events
	next    int
}

// auditItem is an audit event's pushed form with its sequence.
type auditItem struct {
	seq  uint64
	data json.RawMessage
}

// client is one browser's event stream.
type client struct {
	ch      chan []byte
	dropped chan struct{}
}

func newHub() *hub { return &hub{clients: map[*client]struct{}{}} }

// push queues one item for the next flush.
func (h *hub) push(item any) {
	b, err := json.Marshal(item)
	if err != nil {
		return
	}
	h.mu.Lock()
	if len(h.pending) < maxBatch {
		h.pending = append(h.pending, b)
	} else {
		h.lost++
	}
	h.mu.Unlock()
}

// pushAudit queues an audit event and keeps it among the recent ones.
func (h *hub) pushAudit(seq uint64, item any) {
	b, err := json.Marshal(item)
	if err != nil {
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.recent) < recentAudit {
		h.recent = append(h.recent, auditItem{seq, b})
	} else {
		h.recent[h.next] = auditItem{seq, b}
		h.next = (h.next + 1) % recentAudit
	}
	if len(h.pending) < maxBatch {
		h.pending = append(h.pending, b)
	} else {
		h.lost++
	}
}

// auditAfter returns the kept audit events after seq, oldest first.
func (h *hub) auditAfter(seq uint64) []json.RawMessage {
	h.mu.Lock()
	defer h.mu.Unlock()
	var out []json.RawMessage
	for i := range h.recent {
		it := h.recent[(h.next+i)%len(h.recent)]
		if it.seq > seq {
			out = append(out, it.data)
		}
	}
	return out
}

// subscribe adds a client; unsubscribe removes it.
func (h *hub) subscribe() *client {
	c := &client{ch: make(chan []byte, clientBuffer), dropped: make(chan struct{})}
	h.mu.Lock()
	h.clients[c] = struct{}{}
	h.mu.Unlock()
	return c
}

func (h *hub) unsubscribe(c *client) {
	h.mu.Lock()
	delete(h.clients, c)
	h.mu.Unlock()
}

// clientCount is how many clients are subscribed.
func (h *hub) clientCount() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.clients)
}

// dropAll drops every client: their pages reload what they show.
func (h *hub) dropAll() {
	h.mu.Lock()
	defer h.mu.Unlock()
	for c := range h.clients {
		delete(h.clients, c)
		close(c.dropped)
	}
}

// flush sends the pending items as one message to every client. A client
// whose buffer is full is dropped (its dropped channel closes).
func (h *hub) flush() {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.pending) == 0 && h.lost == 0 {
		return
	}
	items := h.pending
	if h.lost > 0 {
		b, _ := json.Marshal(map[string]any{"k": "lost", "n": h.lost})
		items = append(items, b)
	}
	size := 1
	for _, it := range items {
		size += len(it) + 1
	}
	msg := make([]byte, 0, size)
	msg = append(msg, '[')
	for i, it := range items {
		if i > 0 {
			msg = append(msg, ',')
		}
		msg = append(msg, it...)
	}
	msg = append(msg, ']')
	h.pending, h.lost = nil, 0
	for c := range h.clients {
		select {
		case c.ch <- msg:
		default:
			delete(h.clients, c)
			close(c.dropped)
		}
	}
}
