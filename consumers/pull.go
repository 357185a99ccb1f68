package consumers

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/subjects"
)

// pull is one pull request for up to n messages of a consumer, read as
// they come. It is what the library's Fetch sends, with one difference:
// it can be ended early without losing what the server already sent. The
// library's Fetch, cancelled, unsubscribes at once, and a message the
// server sent before it saw the unsubscribe is dropped unseen: it is
// delivered, so it waits out the ack wait before anyone runs it. Ending a
// pull drains its subscription instead: every message sent before the
// server saw the unsubscribe still arrives, and is the reader's.
//
// That is why the consumer pulls for itself rather than through the
// jetstream package, a correctness reason, measured: with a task published
// as each pull stops, 600 rounds left 2-7 messages waiting out the ack
// wait, against 23-44 with the library's Fetch. The request, its statuses
// and the messages' acknowledgements are the library's.
type pull struct {
	sub *nats.Subscription
	// msgs holds the messages received (the server sends at most n).
	msgs chan *nats.Msg
	// ended is closed once the subscription is, after its last message.
	ended <-chan nats.SubStatus
	n     int

	mu   sync.Mutex
	got  int
	err  error
	done bool // the server ended the request, or the reader did
}

// nextSubject is the subject a consumer's pull requests go to.
func nextSubject(js jetstream.JetStream, stream, consumer string) string {
	o := js.Options()
	return subjects.JSAPIPrefix(o.Domain, o.APIPrefix) + "CONSUMER.MSG.NEXT." + stream + "." + consumer
}

// pullRequest is a pull request's body, as the library writes it.
type pullRequest struct {
	Batch   int           `json:"batch"`
	Expires time.Duration `json:"expires,omitempty"`
	NoWait  bool          `json:"no_wait,omitempty"`
}

// startPull asks subject for up to n messages: what is there now when wait
// is 0, or else what comes within wait. The server ends the request a
// little before wait (a tenth of it, at most 1s, as the library does), so
// that its end reaches the reader in time.
func startPull(nc *nats.Conn, subject string, n int, wait time.Duration) (*pull, error) {
	p := &pull{msgs: make(chan *nats.Msg, n), n: n}
	req := pullRequest{Batch: n, NoWait: wait <= 0}
	if wait > 0 {
		req.Expires = wait - min(wait/10, time.Second)
	}
	body, err := json.Marshal(req)
	if err != nil {
		return nil, err
	}
	inbox := nc.NewInbox()
	if p.sub, err = nc.Subscribe(inbox, p.receive); err != nil {
		return nil, err
	}
	p.ended = p.sub.StatusChanged(nats.SubscriptionClosed)
	if err := nc.PublishRequest(subject, inbox, body); err != nil {
		_ = p.sub.Unsubscribe()
		return nil, err
	}
	return p, nil
}

// receive takes one message of the pull's subscription. A status ends the
// request (a 100 heartbeat aside); so does the n-th message.
func (p *pull) receive(m *nats.Msg) {
	user, err := pullStatus(m)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done && !user {
		return
	}
	if user {
		if p.got == p.n { // more than asked for: not the server's, dropped unread
			return
		}
		p.got++
		p.msgs <- m
		if p.got < p.n {
			return
		}
	} else if err == nil {
		return // a heartbeat
	} else if !errors.Is(err, errPullEnded) {
		p.err = err
	}
	// The request is over: the server sends nothing more for it.
	p.done = true
	_ = p.sub.Unsubscribe()
}

// drainWait bounds a pull's drain: the round trip that tells the client
// the server has seen the unsubscribe, and the messages before it.
const drainWait = 2 * time.Second

// stop ends the pull early and reports whether it did (false: it had
// ended). The subscription is drained: what the server sent before it saw
// the unsubscribe still arrives, then ended is closed.
func (p *pull) stop() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.done {
		return false
	}
	p.done = true
	if err := p.sub.Drain(); err != nil { // the connection is closed
		_ = p.sub.Unsubscribe()
	}
	return true
}

// abandon gives up on a pull whose subscription did not close (its
// connection lost): it unsubscribes, and nothing more is read.
func (p *pull) abandon() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.done = true
	_ = p.sub.Unsubscribe()
}

// error is why the server ended the request, when it was not the request
// ending as asked (its time up, no messages, its n messages).
func (p *pull) error() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// errPullEnded marks a status that ends a pull request as asked.
var errPullEnded = errors.New("pull request ended")

// pullStatus reads a message of a pull: a user message, or a status (no
// body, a Status header), as the library's Fetch reads them. A status
// ending the request as asked (404 no messages, 408 its time up, 409 its
// byte limit) is errPullEnded; a 100 heartbeat is nil; any other status is
// the error the library gives it.
func pullStatus(m *nats.Msg) (user bool, err error) {
	if len(m.Data) > 0 || len(m.Header) == 0 {
		return true, nil
	}
	status := m.Header.Get("Status")
	if status == "" {
		return true, nil
	}
	desc := strings.ToLower(m.Header.Get("Description"))
	switch status {
	case "100":
		return false, nil
	case "404", "408":
		return false, errPullEnded
	case "400":
		return false, jetstream.ErrBadRequest
	case "503":
		return false, nats.ErrNoResponders
	case "409":
		switch {
		case strings.Contains(desc, "message size exceeds maxbytes"):
			return false, errPullEnded
		case strings.Contains(desc, "batch completed"):
			return false, jetstream.ErrBatchCompleted
		case strings.Contains(desc, "consumer deleted"):
			return false, jetstream.ErrConsumerDeleted
		case strings.Contains(desc, "leadership change"):
			return false, jetstream.ErrConsumerLeadershipChanged
		case strings.Contains(desc, "server shutdown"):
			return false, jetstream.ErrServerShutdown
		}
	}
	return false, fmt.Errorf("nats: %s", m.Header.Get("Description"))
}

// message is what the consumer needs of a delivered message.
type message interface {
	Metadata() (*jetstream.MsgMetadata, error)
	Data() []byte
	Headers() nats.Header
	Ack() error
	Nak() error
	NakWithDelay(delay time.Duration) error
	InProgress() error
	TermWithReason(reason string) error
}

// pulled is a message of a pull, settled with the acknowledgements the
// library's messages send (to its reply subject, on its connection, once).
type pulled struct{ m *nats.Msg }

func (p pulled) Data() []byte         { return p.m.Data }
func (p pulled) Headers() nats.Header { return p.m.Header }
func (p pulled) Ack() error           { return p.m.Ack() }
func (p pulled) Nak() error           { return p.m.Nak() }
func (p pulled) InProgress() error    { return p.m.InProgress() }

func (p pulled) NakWithDelay(delay time.Duration) error { return p.m.NakWithDelay(delay) }

// TermWithReason terminates the message, its reason in the acknowledgement
// ("+TERM <reason>"), as the library's message does.
func (p pulled) TermWithReason(reason string) error {
	if reason == "" {
		return p.m.Term()
	}
	return p.m.Respond([]byte("+TERM " + reason))
}

// Metadata reads the message's metadata from its reply subject.
func (p pulled) Metadata() (*jetstream.MsgMetadata, error) {
	md, err := p.m.Metadata()
	if err != nil {
		return nil, err
	}
	return &jetstream.MsgMetadata{
		Sequence:     jetstream.SequencePair{Consumer: md.Sequence.Consumer, Stream: md.Sequence.Stream},
		NumDelivered: md.NumDelivered,
		NumPending:   md.NumPending,
		Timestamp:    md.Timestamp,
		Stream:       md.Stream,
		Consumer:     md.Consumer,
		Domain:       md.Domain,
	}, nil
}
