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
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"sort"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// Cache reads and writes role results.
type Cache struct {
	kv    jetstream.KeyValue
	log   *slog.Logger
	scope Scope // of Cache.Key; "" is ScopeFleet
}

// New returns a Cache on the drover_cache bucket.
func New(kv jetstream.KeyValue, log *slog.Logger) *Cache {
	if log == nil {
		log = slog.Default()
	}
	return &Cache{kv: kv, log: log}
}

// keyless are the metadata keys Key leaves out: the board line
// (subjects.MetaBoardLine), for display only, and the budgets (subjects.MetaTaskBudget, subjects.MetaWorkflowBudget), which limit
// what a task may spend, not what its roles answer, so a raised budget
// keeps the task's cached results.
var keyless = map[string]bool{subjects.MetaBoardLine: true, subjects.MetaTaskBudget: true, subjects.MetaWorkflowBudget: true}

// Key returns the cache key of a role request run by a runner with the given
// identity: "<role>.<sha256 hex>" over a canonical encoding of everything
// that determines the role's output (the role, the runner's identity, the
// task's ID, scope, verification, type and metadata, the round, the plan,
// the change, the judge's feedback, the lessons the runner reads, the
// base commit of the role's workspace and the digest of the patch it starts
// from or judges) and nothing that does not (no
// workflow ID, no timestamps, no try number, no max_attempts, no
// metadata.board_line, budget_usd or workflow_budget_usd). Leaving the
// workflow out shares results across workflows: see ScopeFleet, and
// Cache.Key for a key per workflow.
//
// The encoding is a version tag and then each field as its length (8 bytes,
// big endian) and bytes, in that fixed order; metadata in key order; JSON
// values compacted, so white space never changes a key.
func Key(identity string, req runner.Request) string { return key(identity, req, "") }

// key is Key with the workflow ID hashed in when workflow is set
// (ScopeWorkflow).
func key(identity string, req runner.Request, workflow string) string {
	h := sha256.New()
	var n [8]byte
	field := func(b []byte) {
		binary.BigEndian.PutUint64(n[:], uint64(len(b)))
		h.Write(n[:])
		h.Write(b)
	}
	str := func(s string) { field([]byte(s)) }
	str("drover-cache-key/2")
	str(string(req.Role))
	str(identity)
	str(req.Task.ID)
	str(req.Task.Scope)
	str(req.Task.Verification)
	str(req.Task.Type)
	keys := make([]string, 0, len(req.Task.Metadata))
	for k := range req.Task.Metadata {
		if !keyless[k] {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	binary.BigEndian.PutUint64(n[:], uint64(len(keys)))
	h.Write(n[:])
	for _, k := range keys {
		str(k)
		field(compact(req.Task.Metadata[k]))
	}
	binary.BigEndian.PutUint64(n[:], uint64(req.Attempt))
	h.Write(n[:])
	field(compact(req.Plan))
	field(compact(req.Change))
	str(req.Feedback)
	if len(req.Lessons) > 0 { // absent lessons leave the key as before
		str("lessons")
		binary.BigEndian.PutUint64(n[:], uint64(len(req.Lessons)))
		h.Write(n[:])
		for _, l := range req.Lessons {
			str(l)
		}
	}
	if req.WorkspaceBase != "" { // no workspace leaves the key as before
		str("workspace_base")
		str(req.WorkspaceBase)
	}
	if req.WorkspacePatch != "" { // attempt 1 in a workspace keeps its key
		str("workspace_patch")
		str(req.WorkspacePatch)
	}
	if workflow != "" { // ScopeWorkflow; fleet keys stay as they were
		str("workflow")
		str(workflow)
	}
	var sum [sha256.Size]byte
	return subjects.CacheKey(req.Role, hex.EncodeToString(h.Sum(sum[:0])))
}

// compact returns raw without insignificant white space; raw that holds
// none (what encoders write) is returned as it is, and so is raw that is
// not JSON.
func compact(raw json.RawMessage) []byte {
	if !spaceOutsideStrings(raw) {
		return raw
	}
	var buf bytes.Buffer
	if json.Compact(&buf, raw) != nil {
		return raw
	}
	return buf.Bytes()
}

// spaceOutsideStrings reports whether raw holds white space outside its
// JSON strings: the only bytes json.Compact takes out of valid JSON.
func spaceOutsideStrings(raw []byte) bool {
	in, escaped := false, false
	for _, c := range raw {
		switch {
		case escaped:
			escaped = false
		case in && c == '\\':
			escaped = true
		case c == '"':
			in = !in
		case !in && (c == ' ' || c == '\t' || c == '\r' || c == '\n'):
			return true
		}
	}
	return false
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

// PutAsync stores a result under key without waiting for the server. The
// returned future settles when the server has stored it (or failed to).
func (c *Cache) PutAsync(js jetstream.JetStream, key string, r runner.Result) (jetstream.PubAckFuture, error) {
	b, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("cache: encode %s: %w", key, err)
	}
	f, err := js.PublishMsgAsync(&nats.Msg{Subject: "$KV." + c.kv.Bucket() + "." + key, Data: b})
	if err != nil {
		return nil, fmt.Errorf("cache: put %s: %w", key, err)
	}
	return f, nil
}
