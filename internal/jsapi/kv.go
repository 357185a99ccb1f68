package jsapi

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Bucket reads and writes a key-value bucket directly: a read is one
// direct get of the key's last value, a write one Publish expecting the
// key's last revision. Outcomes and errors are those of the bucket's own
// Get, Create and Update; what the bucket does beyond its common path (a
// create over a deleted key's marker, a read of a bucket that answers no
// direct gets) it still does. A Bucket without a JetStream context makes
// every call through the bucket's own API.
type Bucket struct {
	js jetstream.JetStream // nil: every call through kv
	kv jetstream.KeyValue
	// put is the prefix of a key's subject; get that of its direct get.
	put, get string
}

// NewBucket returns kv read and written through js, or through kv's own
// API when js is nil. The bucket is one of js's, with no domain or API
// prefix and no mirror (Drover's are so).
func NewBucket(js jetstream.JetStream, kv jetstream.KeyValue) *Bucket {
	b := &Bucket{js: js, kv: kv}
	if js != nil {
		b.put = "$KV." + kv.Bucket() + "."
		b.get = "$JS.API.DIRECT.GET.KV_" + kv.Bucket() + "." + b.put
	}
	return b
}

// Entry is a key's last value and its revision.
type Entry struct {
	Value    []byte
	Revision uint64
}

// Get returns key's last value: jetstream.ErrKeyNotFound when it has none
// or was deleted or purged (as the bucket's Get has it),
// jetstream.ErrInvalidKey for a key the bucket cannot hold.
func (b *Bucket) Get(ctx context.Context, key string) (Entry, error) {
	if b.js == nil {
		return b.slowGet(ctx, key)
	}
	if !KeyValid(key) {
		return Entry{}, jetstream.ErrInvalidKey
	}
	ctx, cancel := bounded(ctx, b.js)
	defer cancel()
	m, err := b.js.Conn().RequestWithContext(ctx, b.get+key, nil)
	if errors.Is(err, nats.ErrNoResponders) {
		// Nothing answers direct gets: a bucket made without them, or
		// one whose stream is electing its leader. The bucket's Get reads
		// the one through the stream's API and answers the other as the
		// library does, with its own error.
		return b.slowGet(ctx, key)
	}
	if err != nil {
		return Entry{}, err
	}
	e, err := readEntry(m)
	if errors.Is(err, jetstream.ErrKeyDeleted) {
		return Entry{}, jetstream.ErrKeyNotFound
	}
	return e, err
}

// slowGet is Get through the bucket's own API.
func (b *Bucket) slowGet(ctx context.Context, key string) (Entry, error) {
	e, err := b.kv.Get(ctx, key)
	if err != nil {
		return Entry{}, err
	}
	return Entry{Value: e.Value(), Revision: e.Revision()}, nil
}

// readEntry reads a direct get's answer as the bucket's Get does;
// jetstream.ErrKeyDeleted, with the marker's revision, for a deleted or
// purged key. An answer without the headers the server gives every stored
// message (its stream, sequence, subject and time stamp) is refused, as
// the library refuses it; the time stamp, which an Entry does not hold, is
// not parsed.
func readEntry(m *nats.Msg) (Entry, error) {
	if len(m.Data) == 0 {
		switch status := m.Header.Get("Status"); status {
		case "":
		case "404":
			return Entry{}, jetstream.ErrKeyNotFound
		default:
			desc := m.Header.Get("Description")
			if desc == "" {
				desc = "unable to get message"
			}
			return Entry{}, fmt.Errorf("nats: %s (status %s)", desc, status)
		}
	}
	rev, err := strconv.ParseUint(m.Header.Get(jetstream.SequenceHeader), 10, 64)
	if err != nil || m.Header.Get(jetstream.StreamHeader) == "" ||
		m.Header.Get(jetstream.SubjectHeader) == "" || m.Header.Get(jetstream.TimeStampHeaer) == "" {
		return Entry{}, fmt.Errorf("nats: direct get answered without its stream, sequence, subject and time stamp: %w", jetstream.ErrInvalidJSAck)
	}
	e := Entry{Value: m.Data, Revision: rev}
	if deleted(m.Header) {
		return e, jetstream.ErrKeyDeleted
	}
	return e, nil
}

// deleted reports whether h marks a deleted or purged key: a delete or
// purge of the bucket's, or a marker the server left (a key aged out,
// purged or removed).
func deleted(h nats.Header) bool {
	if op := h.Get("KV-Operation"); op != "" {
		return op == "DEL" || op == "PURGE"
	}
	switch h.Get(jetstream.MarkerReasonHeader) {
	case "MaxAge", "Purge", "Remove":
		return true
	}
	return false
}

// Create writes key's first value and returns its revision;
// jetstream.ErrKeyExists when the key has one.
func (b *Bucket) Create(ctx context.Context, key string, value []byte) (uint64, error) {
	if b.js == nil {
		return b.kv.Create(ctx, key, value)
	}
	rev, err := b.write(ctx, key, value, 0)
	if !IsWrongLastSequence(err) {
		return rev, err
	}
	// The key has a last value: a value (the key exists) or a deleted
	// key's marker. The bucket's Create tells which, and writes over a
	// marker. Any other failure (a timeout, whose write may have been
	// stored) is returned as it is. Here the bucket's Create would read
	// the key and, finding a marker, write over it; returning the failure
	// leaves that to the caller's retry, which then finds the key as the
	// first write left it.
	return b.kv.Create(ctx, key, value)
}

// Update replaces key's value if its revision is still rev and returns the
// new revision; an error matching jetstream.ErrKeyExists and
// jetstream.ErrKeyRevisionMismatch when it is not.
func (b *Bucket) Update(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if b.js == nil {
		return b.kv.Update(ctx, key, value, rev)
	}
	next, err := b.write(ctx, key, value, rev)
	if IsWrongLastSequence(err) {
		return 0, fmt.Errorf("%w: %w", err, jetstream.ErrKeyRevisionMismatch)
	}
	return next, err
}

// Put writes key's value whatever its revision and returns the new
// revision, as the bucket's Put does.
func (b *Bucket) Put(ctx context.Context, key string, value []byte) (uint64, error) {
	if b.js == nil {
		return b.kv.Put(ctx, key, value)
	}
	if !KeyValid(key) {
		return 0, jetstream.ErrInvalidKey
	}
	a, err := Publish(ctx, b.js, &nats.Msg{Subject: b.put + key, Data: value})
	return a.Seq, err
}

// write publishes value to key's subject, expecting the key's last
// revision to be rev (0: none).
func (b *Bucket) write(ctx context.Context, key string, value []byte, rev uint64) (uint64, error) {
	if !KeyValid(key) {
		return 0, jetstream.ErrInvalidKey
	}
	msg := &nats.Msg{
		Subject: b.put + key,
		Header:  nats.Header{jetstream.ExpectedLastSubjSeqHeader: {strconv.FormatUint(rev, 10)}},
		Data:    value,
	}
	a, err := Publish(ctx, b.js, msg)
	return a.Seq, err
}

// IsWrongLastSequence reports whether err is a stream's refusal of a
// publish whose expected last sequence was not the subject's (a lost
// compare-and-set).
func IsWrongLastSequence(err error) bool {
	var apiErr *jetstream.APIError
	if !errors.As(err, &apiErr) {
		return false
	}
	return apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequence ||
		apiErr.ErrorCode == jetstream.JSErrCodeStreamWrongLastSequenceConstant
}

// KeyValid reports whether a bucket can hold key: dot-separated tokens of
// letters, digits and -/_= (the library's rule, without its regexp).
func KeyValid(key string) bool {
	if key == "" || key[0] == '.' || key[len(key)-1] == '.' || strings.Contains(key, "..") {
		return false
	}
	for i := 0; i < len(key); i++ {
		switch c := key[i]; {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case c == '-', c == '/', c == '_', c == '=', c == '.':
		default:
			return false
		}
	}
	return true
}
