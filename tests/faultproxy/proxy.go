// Package faultproxy is a loopback TCP proxy for fault tests: it forwards
// every connection to one target and, on command, cuts the connections,
// blackholes a direction, delays traffic, or drops the server's replies.
//
// It is for tests only. It knows nothing of the protocol it carries: it
// moves bytes. Faults that would leave a half-delivered protocol frame on
// a live connection (dropping replies) end by cutting the connections, so
// the client reconnects instead of parsing garbage.
package faultproxy

import (
	"bytes"
	"net"
	"sync"
	"time"
)

// Direction selects the traffic a fault applies to.
type Direction int

const (
	// Up is client to server.
	Up Direction = 1 << iota
	// Down is server to client.
	Down
	// Both is both directions.
	Both = Up | Down
)

// chunk is how much one forwarding step reads.
const chunk = 32 << 10

// Proxy forwards connections accepted on a loopback port to a target.
type Proxy struct {
	ln     net.Listener
	target string

	mu        sync.Mutex
	cond      *sync.Cond // broadcast when a fault changes
	conns     map[*link]struct{}
	refuse    bool          // cut: new connections are closed at once
	holes     Direction     // blackholed directions: bytes wait, unread
	delay     time.Duration // added before each forwarded chunk
	dropDown  bool          // server-to-client bytes are discarded
	trigger   []byte        // client bytes that start dropDown once seen
	holeMark  []byte        // client bytes that blackhole Up once seen
	dropped   int64         // server-to-client bytes discarded
	forwarded [2]int64      // bytes forwarded up and down
	closed    bool
	wg        sync.WaitGroup
}

// link is one proxied connection: the client's and the server's side.
type link struct {
	client, server net.Conn
	dead           bool // cut or closed; guarded by Proxy.mu
}

func (l *link) close() {
	_ = l.client.Close()
	_ = l.server.Close()
}

// kill closes l and marks it dead; the caller holds p.mu.
func (p *Proxy) kill(l *link) {
	l.dead = true
	l.close()
	p.cond.Broadcast()
}

// Start listens on a free loopback port and forwards to target
// ("host:port").
func Start(target string) (*Proxy, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p := &Proxy{ln: ln, target: target, conns: map[*link]struct{}{}}
	p.cond = sync.NewCond(&p.mu)
	p.wg.Add(1)
	go p.accept()
	return p, nil
}

// Addr is the proxy's "host:port"; URL is it as nats://host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// URL is the proxy's address as a nats:// URL.
func (p *Proxy) URL() string { return "nats://" + p.Addr() }

// Close stops the proxy and closes every connection.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	for l := range p.conns {
		p.kill(l)
	}
	p.mu.Unlock()
	_ = p.ln.Close()
	p.wg.Wait()
}

// Cut closes every connection, and closes new ones at once until Heal:
// the client sees its connection reset and cannot reconnect.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.refuse = true
	for l := range p.conns {
		p.kill(l)
	}
}

// Blackhole stops forwarding in dir: bytes are left unread, so the
// connections stay open and the sender's writes pile up in the kernel's
// buffers, as with a peer that silently drops packets. Heal forwards them.
func (p *Proxy) Blackhole(dir Direction) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holes |= dir
	p.cond.Broadcast()
}

// Delay adds d before each forwarded chunk, in both directions.
func (p *Proxy) Delay(d time.Duration) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.delay = d
}

// DropReplies discards every byte the server sends until Heal, which then
// cuts the connections once (a reply dropped mid-frame would otherwise
// corrupt the stream) and lets clients reconnect: a request is forwarded
// and its reply lost.
func (p *Proxy) DropReplies() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.dropDown = true
}

// DropRepliesAfter is DropReplies from the moment a chunk the client sends
// contains marker (say, the start of a publish to one subject): that chunk
// is forwarded, and what the server sends from then on is dropped.
func (p *Proxy) DropRepliesAfter(marker []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.trigger = append([]byte(nil), marker...)
}

// BlackholeUpAfter is Blackhole(Up) from the moment a chunk the client
// sends contains marker: that chunk is forwarded, what the client sends
// after it waits (say, the ack after a task's last event).
func (p *Proxy) BlackholeUpAfter(marker []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holeMark = append([]byte(nil), marker...)
}

// Heal ends every fault: connections are accepted again, blackholed bytes
// flow, delays end, and connections that lost replies are cut.
func (p *Proxy) Heal() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.dropDown {
		for l := range p.conns {
			p.kill(l)
		}
	}
	p.refuse, p.holes, p.delay, p.dropDown, p.trigger, p.holeMark = false, 0, 0, false, nil, nil
	p.cond.Broadcast()
}

// Dropped is how many server-to-client bytes DropReplies discarded.
func (p *Proxy) Dropped() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.dropped
}

// Forwarded is how many bytes were forwarded in dir (Up or Down).
func (p *Proxy) Forwarded(dir Direction) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if dir == Up {
		return p.forwarded[0]
	}
	return p.forwarded[1]
}

// Conns is how many connections are open through the proxy.
func (p *Proxy) Conns() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.conns)
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.refuse || p.closed
		p.mu.Unlock()
		if refuse {
			_ = c.Close()
			continue
		}
		s, err := net.DialTimeout("tcp", p.target, 5*time.Second)
		if err != nil {
			_ = c.Close()
			continue
		}
		l := &link{client: c, server: s}
		p.mu.Lock()
		if p.refuse || p.closed {
			p.mu.Unlock()
			l.close()
			continue
		}
		p.conns[l] = struct{}{}
		p.mu.Unlock()
		var pair sync.WaitGroup
		pair.Add(2)
		p.wg.Add(1)
		go func() { defer p.wg.Done(); defer pair.Done(); p.pipe(l, Up, s, c) }()
		p.wg.Add(1)
		go func() { defer p.wg.Done(); defer pair.Done(); p.pipe(l, Down, c, s) }()
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			pair.Wait()
			p.mu.Lock()
			delete(p.conns, l)
			p.mu.Unlock()
		}()
	}
}

// pipe copies src to dst in direction dir until either side closes,
// applying the faults in force before each chunk.
func (p *Proxy) pipe(l *link, dir Direction, dst, src net.Conn) {
	defer func() {
		p.mu.Lock()
		p.kill(l)
		p.mu.Unlock()
	}()
	buf := make([]byte, chunk)
	for {
		if !p.waitOpen(l, dir) {
			return
		}
		n, err := src.Read(buf)
		if n > 0 {
			if !p.forward(l, dir, dst, buf[:n]) {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// waitOpen waits while dir is blackholed; false once the proxy closed.
func (p *Proxy) waitOpen(l *link, dir Direction) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	for p.holes&dir != 0 && !p.closed && p.open(l) {
		p.cond.Wait()
	}
	return !p.closed && p.open(l)
}

// open reports whether l is not cut; the caller holds mu.
func (p *Proxy) open(l *link) bool {
	return !l.dead
}

// forward writes data to dst unless a fault says otherwise.
func (p *Proxy) forward(l *link, dir Direction, dst net.Conn, data []byte) bool {
	p.mu.Lock()
	delay := p.delay
	if dir == Down && p.dropDown {
		p.dropped += int64(len(data))
		p.mu.Unlock()
		return true
	}
	p.mu.Unlock()
	if delay > 0 {
		time.Sleep(delay) // the fault itself: latency on the wire
	}
	p.mu.Lock()
	// A blackhole that began while this chunk was read holds it too.
	for p.holes&dir != 0 && !p.closed && p.open(l) {
		p.cond.Wait()
	}
	if dir == Down && p.dropDown {
		p.dropped += int64(len(data))
		p.mu.Unlock()
		return true
	}
	// Counted, and the trigger checked, before the write: the reply to
	// these bytes may come back before Write returns.
	if dir == Up {
		p.forwarded[0] += int64(len(data))
		if p.trigger != nil && bytes.Contains(data, p.trigger) {
			p.dropDown, p.trigger = true, nil
		}
		if p.holeMark != nil && bytes.Contains(data, p.holeMark) {
			p.holes, p.holeMark = p.holes|Up, nil
		}
	} else {
		p.forwarded[1] += int64(len(data))
	}
	p.mu.Unlock()
	_, err := dst.Write(data)
	return err == nil
}
