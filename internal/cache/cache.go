// Package cache is the content-addressed cache of role results in the
// drover_cache KV bucket. Keys are "<role>.<sha256 hex>" over a canonical
// encoding of everything that determines the role's output; expiry is the
// bucket's TTL. A lost, expired, corrupt or unreachable entry is a miss, so
// the cache changes cost, never outcomes.
package cache

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Cache reads and writes role results.
type Cache struct {
	kv  jetstream.KeyValue
	log *slog.Logger
}

// New returns a Cache on the drover_cache bucket.
func New(kv jetstream.KeyValue, log *slog.Logger) *Cache {
	if log == nil {
		log = slog.Default()
	}
	return &Cache{kv: kv, log: log}
}

// keyContent is the canonical input of a cache key. Field order is fixed by
// the struct; maps are sorted by encoding/json; raw JSON is compacted. It
// holds nothing that does not change a role's output: no workflow ID, no
// timestamps, no try number.
type keyContent struct {
	Version      int                        `json:"v"`
	Role         subjects.Role              `json:"role"`
	Runner       string                     `json:"runner"`
	TaskID       string                     `json:"task_id"`
	Scope        string                     `json:"scope"`
	Verification string                     `json:"verification"`
	Type         string                     `json:"type"`
	MaxAttempts  int                        `json:"max_attempts"`
	Metadata     map[string]json.RawMessage `json:"metadata"`
	Attempt      int                        `json:"attempt"`
	Plan         json.RawMessage            `json:"plan"`
	Change       json.RawMessage            `json:"change"`
	Feedback     string                     `json:"feedback"`
}

// Key returns the cache key of a role request run by a runner with the given
// identity.
func Key(identity string, req runner.Request) string {
	kc := keyContent{
		Version:      1,
		Role:         req.Role,
		Runner:       identity,
		TaskID:       req.Task.ID,
		Scope:        req.Task.Scope,
		Verification: req.Task.Verification,
		Type:         req.Task.Type,
		MaxAttempts:  req.Task.MaxAttempts,
		Metadata:     compactAll(req.Task.Metadata),
		Attempt:      req.Attempt,
		Plan:         compact(req.Plan),
		Change:       compact(req.Change),
		Feedback:     req.Feedback,
	}
	b, err := json.Marshal(kc)
	if err != nil { // only raw JSON that does not parse gets here; hash it as text
		b = fmt.Appendf(nil, "%#v", kc)
	}
	sum := sha256.Sum256(b)
	return subjects.CacheKey(req.Role, hex.EncodeToString(sum[:]))
}

func compact(raw json.RawMessage) json.RawMessage {
	if len(raw) == 0 {
		return nil
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

func compactAll(m map[string]json.RawMessage) map[string]json.RawMessage {
	if len(m) == 0 {
		return nil
	}
	out := make(map[string]json.RawMessage, len(m))
	for k, v := range m {
		out[k] = compact(v)
	}
	return out
}

// Get returns the cached result under key. Every failure is a miss; a
// corrupt entry or an unreachable bucket is logged.
func (c *Cache) Get(ctx context.Context, key string) (runner.Result, bool) {
	e, err := c.kv.Get(ctx, key)
	if err != nil {
		if !errors.Is(err, jetstream.ErrKeyNotFound) && !errors.Is(err, jetstream.ErrKeyDeleted) {
			c.log.Warn("cache get failed; running the role", "key", key, "err", err)
		}
		return runner.Result{}, false
	}
	var r runner.Result
	if err := json.Unmarshal(e.Value(), &r); err != nil || len(r.Output) == 0 {
		c.log.Warn("cache entry corrupt; running the role", "key", key, "err", err)
		return runner.Result{}, false
	}
	return r, true
}

// Put stores a result under key. A failure only costs a future miss, so it
// is logged and returned for counting, never fatal to the task.
func (c *Cache) Put(ctx context.Context, key string, r runner.Result) error {
	b, err := json.Marshal(r)
	if err != nil {
		return fmt.Errorf("cache: encode %s: %w", key, err)
	}
	if _, err := c.kv.Put(ctx, key, b); err != nil {
		c.log.Warn("cache put failed", "key", key, "err", err)
		return fmt.Errorf("cache: put %s: %w", key, err)
	}
	return nil
}
