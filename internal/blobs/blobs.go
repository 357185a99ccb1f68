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
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"unicode/utf8"

	"github.com/nats-io/nats.go/jetstream"
)

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
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil || fields == nil {
		return s.put(ctx, raw)
	}
	for k, v := range fields {
		if len(v) <= Limit {
			continue
		}
		ref, err := s.put(ctx, v)
		if err != nil {
			return nil, err
		}
		fields[k] = ref
	}
	out, err := json.Marshal(fields)
	if err != nil {
		return nil, fmt.Errorf("blobs: encode: %w", err)
	}
	if len(out) > 4*Limit { // many mid-sized fields: store the whole value
		return s.put(ctx, raw)
	}
	return out, nil
}

func (s *Store) put(ctx context.Context, v []byte) (json.RawMessage, error) {
	sum := sha256.Sum256(v)
	name := hex.EncodeToString(sum[:])
	if _, err := s.obj.GetInfo(ctx, name); err != nil {
		if !errors.Is(err, jetstream.ErrObjectNotFound) {
			return nil, fmt.Errorf("blobs: info %s: %w", name, err)
		}
		if _, err := s.obj.PutBytes(ctx, name, v); err != nil {
			return nil, fmt.Errorf("blobs: put %s (%d bytes): %w", name, len(v), err)
		}
	}
	head := v[:min(len(v), HeadBytes)]
	for len(head) > 0 && !utf8.Valid(head) {
		head = head[:len(head)-1]
	}
	return json.Marshal(Ref{Blob: name, Bytes: len(v), Truncated: true, Head: string(head)})
}

// Expand reverses Shrink: references are replaced by the stored values.
func (s *Store) Expand(ctx context.Context, raw json.RawMessage) (json.RawMessage, error) {
	if !bytes.Contains(raw, []byte(`"blob"`)) {
		return raw, nil
	}
	if v, ok, err := s.resolve(ctx, raw); ok || err != nil {
		return v, err
	}
	var fields map[string]json.RawMessage
	if json.Unmarshal(raw, &fields) != nil {
		return raw, nil
	}
	for k, f := range fields {
		v, ok, err := s.resolve(ctx, f)
		if err != nil {
			return nil, err
		}
		if ok {
			fields[k] = v
		}
	}
	return json.Marshal(fields)
}

func (s *Store) resolve(ctx context.Context, raw json.RawMessage) (json.RawMessage, bool, error) {
	var ref Ref
	if json.Unmarshal(raw, &ref) != nil || ref.Blob == "" || !ref.Truncated || len(ref.Blob) != 64 {
		return nil, false, nil
	}
	v, err := s.obj.GetBytes(ctx, ref.Blob)
	if err != nil {
		return nil, false, fmt.Errorf("blobs: get %s: %w", ref.Blob, err)
	}
	return v, true, nil
}
