package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"hash"
	"strings"
)

// RuleChain: an event's Drover-Prev is not the link of the previous event
// on its task's subjects (that event was changed, or one was removed or
// inserted), or an event lacks Drover-Prev after its task's chain began.
const RuleChain = "hash-chain"

// chainLink is what the verifier keeps per task filter: the last event's
// link and sequence, and whether the task's chain has begun (an event
// with Drover-Prev; events written before the chain have none).
type chainLink struct {
	link    [sha256.Size]byte
	seq     uint64
	chained bool
}

// chainKey is the task part of an audit subject, "<wf>.<task>", or "" when
// the subject has not the contract's form.
func (c *checker) chainKey(subject string) string {
	rest, ok := strings.CutPrefix(subject, c.prefix)
	if !ok {
		return ""
	}
	wf, after, ok := strings.Cut(rest, ".")
	if !ok {
		return ""
	}
	task, _, ok := strings.Cut(after, ".")
	if !ok {
		return ""
	}
	return rest[:len(wf)+1+len(task)]
}

// chain checks one event's link; prev is its Drover-Prev, has whether it
// carries one.
func (c *checker) chain(seq uint64, subject, msgID, prev string, has bool, data []byte) {
	key := c.chainKey(subject)
	if key == "" {
		return // the subject rule reports it
	}
	if c.links == nil {
		c.links = make(map[string]*chainLink, 1024)
	}
	last := c.links[key]
	e := event{seq: seq, subject: subject, id: msgID}
	switch {
	case has && last == nil && prev != "":
		c.violate(&e, RuleChain, "Drover-Prev names a previous event, but the task has none before it: its earlier events were removed")
	case has && last != nil && !sameLink(prev, &last.link):
		c.violate(&e, RuleChain, "Drover-Prev is not the link of the task's previous event (seq %d): that event was changed, or an event was removed or inserted between them", last.seq)
	case !has && last != nil && last.chained:
		c.violate(&e, RuleChain, "no Drover-Prev after the task's chain began (seq %d)", last.seq)
	}
	if last == nil {
		last = &chainLink{}
		c.links[key] = last
	}
	if c.hasher == nil {
		c.hasher = sha256.New()
	}
	linkInto(c.hasher, &last.link, subject, prev, data)
	last.seq, last.chained = seq, last.chained || has
}

// sameLink reports whether prev, in hex, is link.
func sameLink(prev string, link *[sha256.Size]byte) bool {
	var got [sha256.Size]byte
	if len(prev) != 2*sha256.Size {
		return false
	}
	if _, err := hex.Decode(got[:], []byte(prev)); err != nil {
		return false
	}
	return got == *link
}

// linkInto is Link through a reused hasher, into out.
func linkInto(h hash.Hash, out *[sha256.Size]byte, subject, prev string, body []byte) {
	h.Reset()
	_, _ = h.Write([]byte(subject))
	_, _ = h.Write([]byte{'\n'})
	_, _ = h.Write([]byte(prev))
	_, _ = h.Write([]byte{'\n'})
	_, _ = h.Write(body)
	h.Sum(out[:0])
}
