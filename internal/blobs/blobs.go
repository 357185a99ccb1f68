// Package blobs keeps values too large to inline in the drover_blobs object
// store. A JSON object field larger than Limit is stored under its sha256
// and replaced by a reference:
//
//	{"blob": "<sha256>", "bytes": N, "truncated": true, "head": "<first 1 KiB>"}
package blobs

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
)

// ErrDigestMismatch is returned when a stored object's content does not
// hash to the sha256 it is stored under: the object was overwritten or
// corrupted, and its bytes are not the value the reference stands for.
var ErrDigestMismatch = errors.New("blob content does not match its sha256 name")

// Limit is the largest field kept inline, in bytes.
const Limit = 64 << 10

// HeadBytes is how much of a stored value its reference shows.
const HeadBytes = 1 << 10

// Ref is the reference that replaces a stored field.
type Ref struct {
	Blob      string `json:"blob"`
	Bytes     int    `json:"bytes"`
	Truncated bool   `json:"truncated"`
	Head      string `json:"head"`
}

// Store puts and gets blobs.
type Store struct {
	obj jetstream.ObjectStore
}

// New returns a Store on the drover_blobs object store.
func New(obj jetstream.ObjectStore) *Store { return &Store{obj: obj} }

// Shrink returns raw with every top-level field over Limit (or raw itself,
// when it is not an object and over Limit) replaced by a Ref. Values at or
// under the limit are returned unchanged, without a copy.
func (s *Store) Shrink(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if len(raw) <= Limit {
		return raw, nil
	}
	spans, ok := members(raw)
	if !ok {
		return s.put(ctx, raw)
	}
	var (
		out    bytes.Buffer
		fields [][]byte // the values replaced, stored once the result is kept
		last   int
	)
	for _, sp := range spans {
		if sp.end-sp.start <= Limit {
			continue
		}
		v := raw[sp.start:sp.end]
		ref := reference(sha256.Sum256(v), v)
		out.Write(raw[last:sp.start])
		out.Write(ref)
		last = sp.end
		fields = append(fields, v)
	}
	out.Write(raw[last:])
	if out.Len() > 4*Limit { // many mid-sized fields: store the whole value
		return s.put(ctx, raw)
	}
	for _, v := range fields {
		if _, err := s.put(ctx, v); err != nil {
			return nil, err
		}
	}
	return out.Bytes(), nil
}

// span is where one top-level member value of a JSON object lies.
type span struct{ start, end int }

// members returns the spans of the member values of raw, in order, or false
// when raw is not one JSON object. Replacing values at their spans keeps
// every other byte (key order, duplicate keys, white space, escapes) as it
// was, so Expand gives back exactly what Shrink was given.
func members(raw []byte) ([]span, bool) {
	if !json.Valid(raw) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, false
	}
	var out []span
	for dec.More() {
		if _, err := dec.Token(); err != nil { // the key
			return nil, false
		}
		var v json.RawMessage
		if err := dec.Decode(&v); err != nil {
			return nil, false
		}
		end := int(dec.InputOffset())
		out = append(out, span{end - len(v), end})
	}
	return out, true
}

// refreshAfter is the age past which put writes an object that is already
// stored again, so its modification time says it is still in use: garbage
// collection removes only objects older than its retention, which is far
// longer than this.
const refreshAfter = time.Hour

// put stores v under its sha256, unless it is there already with that
// content and was written less than refreshAfter ago, and returns its
// reference. An object under the name whose digest is not v's (overwritten
// or corrupted) is replaced by v.
func (s *Store) put(ctx context.Context, v []byte) (json.RawMessage, error) {
	sum := sha256.Sum256(v)
	if err := s.store(ctx, sum, v); err != nil {
		return nil, err
	}
	return reference(sum, v), nil
}

// store puts v under its sha256 sum, unless the store holds it already
// and it was written recently.
func (s *Store) store(ctx context.Context, sum [sha256.Size]byte, v []byte) error {
	name := hex.EncodeToString(sum[:])
	info, err := s.obj.GetInfo(ctx, name)
	switch {
	case errors.Is(err, jetstream.ErrObjectNotFound):
	case err != nil:
		return fmt.Errorf("blobs: info %s: %w", name, err)
	case info.Digest == "SHA-256="+base64.URLEncoding.EncodeToString(sum[:]) && time.Since(info.ModTime) < refreshAfter:
		return nil
	}
	if _, err := s.obj.PutBytes(ctx, name, v); err != nil {
		return fmt.Errorf("blobs: put %s (%d bytes): %w", name, len(v), err)
	}
	return nil
}

// Put stores v under its sha256 as Shrink does and returns its reference
// without a head (v's content stays out of whatever holds the reference).
func (s *Store) Put(ctx context.Context, v []byte) (json.RawMessage, error) {
	sum := sha256.Sum256(v)
	if err := s.store(ctx, sum, v); err != nil {
		return nil, err
	}
	ref, _ := json.Marshal(Ref{Blob: hex.EncodeToString(sum[:]), Bytes: len(v), Truncated: true}) // a struct of strings and ints always encodes
	return ref, nil
}

// reference is the Ref that stands for v, named by its sha256 sum.
func reference(sum [sha256.Size]byte, v []byte) json.RawMessage {
	name := hex.EncodeToString(sum[:])
	head := v[:min(len(v), HeadBytes)]
	for len(head) > 0 && !utf8.Valid(head) {
		head = head[:len(head)-1]
	}
	ref, _ := json.Marshal(Ref{Blob: name, Bytes: len(v), Truncated: true, Head: string(head)}) // a struct of strings and ints always encodes
	return ref
}

// Expand reverses Shrink: references are replaced by the stored values.
func (s *Store) Expand(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(raw, []byte(`"blob"`)) {
		return raw, nil
	}
	if v, ok, err := s.resolve(ctx, raw); ok || err != nil {
		return v, err
	}
	spans, ok := members(raw)
	if !ok {
		return raw, nil
	}
	var out bytes.Buffer
	last := 0
	for _, sp := range spans {
		v, ok, err := s.resolve(ctx, raw[sp.start:sp.end])
		if err != nil {
			return nil, err
		}
		if ok {
			out.Write(raw[last:sp.start])
			out.Write(v)
			last = sp.end
		}
	}
	out.Write(raw[last:])
	return out.Bytes(), nil
}

// resolve returns the value raw refers to, when raw is a Ref. The value's
// sha256 must be the Ref's name: other bytes under that name are refused
// with ErrDigestMismatch, never returned as the value.
func (s *Store) resolve(ctx context.Context, raw json.RawMessage) (json.RawMessage, bool, error) {
	var ref Ref
	if json.Unmarshal(raw, &ref) != nil || ref.Blob == "" || !ref.Truncated || !ValidName(ref.Blob) {
		return nil, false, nil
	}
	v, err := s.Get(ctx, ref.Blob)
	if err != nil {
		return nil, false, err
	}
	return v, true, nil
}

// Get returns the object stored under name, a sha256 in lower-case hex,
// after checking that its content hashes to name (ErrDigestMismatch if
// not).
func (s *Store) Get(ctx context.Context, name string) ([]byte, error) {
	v, err := s.obj.GetBytes(ctx, name)
	if err != nil {
		return nil, fmt.Errorf("blobs: get %s: %w", name, err)
	}
	sum := sha256.Sum256(v)
	if got := hex.EncodeToString(sum[:]); got != name {
		return nil, fmt.Errorf("blobs: get %s: %w (its %d bytes hash to %s)", name, ErrDigestMismatch, len(v), got)
	}
	return v, nil
}

// ValidName reports whether name can be a blob's name: 64 lower-case hex
// digits.
func ValidName(name string) bool {
	if len(name) != 2*sha256.Size {
		return false
	}
	for i := 0; i < len(name); i++ {
		if c := name[i]; !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}
