package cache

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// InvalidateRole removes every entry of role in one purge request and
// returns how many messages were removed.
func (a *Admin) InvalidateRole(ctx context.Context, role subjects.Role) (uint64, error) {
	if !role.Valid() {
		return 0, fmt.Errorf("cache: role %q: want planner, implementer or judge", role)
	}
	return a.purge(ctx, a.roleSubject(role))
}

// Clear removes every entry of the cache and returns how many were removed.
func (a *Admin) Clear(ctx context.Context) (uint64, error) {
	return a.purge(ctx, "")
}

// TaskInvalidation is what InvalidateTask found and removed.
type TaskInvalidation struct {
	// Keys are the cache keys the task's roles used, in every round, sorted.
	Keys []string `json:"keys"`
	// Removed counts the keys that still had an entry.
	Removed uint64 `json:"removed"`
}

// InvalidateTask removes the cache entries of one task: the keys in its
// state's outputs (the latest round) and the input.cache_key of each of its
// audit events (every round, also those whose keys the state has since
// replaced). Cache keys depend on the task ID but not the workflow, so this
// also invalidates re-runs of the task under other workflows.
func (a *Admin) InvalidateTask(ctx context.Context, workflow, task string) (TaskInvalidation, error) {
	keys := map[string]bool{}
	found := false
	kv, err := a.js.KeyValue(ctx, a.names.StateBucket())
	if err != nil && !errors.Is(err, jetstream.ErrBucketNotFound) {
		return TaskInvalidation{}, fmt.Errorf("cache: state bucket %s: %w", a.names.StateBucket(), err)
	}
	if kv != nil {
		t, err := state.New(kv).GetTask(ctx, workflow, task)
		switch {
		case err == nil:
			found = true
			for _, k := range t.Outputs {
				if validKey(k) {
					keys[k] = true
				}
			}
		case !errors.Is(err, state.ErrNotFound):
			return TaskInvalidation{}, fmt.Errorf("cache: %w", err)
		}
	}
	q := audit.Query{Workflow: workflow, Task: task}
	err = audit.Replay(ctx, a.js, a.names, q, func(r audit.Record) error {
		found = true
		var in struct {
			CacheKey string `json:"cache_key"`
		}
		if r.Err == nil && json.Unmarshal(r.Event.Input, &in) == nil && validKey(in.CacheKey) {
			keys[in.CacheKey] = true
		}
		return nil
	})
	if err != nil && !errors.Is(err, jetstream.ErrStreamNotFound) {
		return TaskInvalidation{}, fmt.Errorf("cache: events of %s/%s: %w", workflow, task, err)
	}
	if !found {
		return TaskInvalidation{}, fmt.Errorf("%w: %s/%s", ErrUnknownTask, workflow, task)
	}
	var inv TaskInvalidation
	for k := range keys {
		inv.Keys = append(inv.Keys, k)
	}
	slices.Sort(inv.Keys)
	for _, k := range inv.Keys {
		n, err := a.purge(ctx, a.keySubject(k))
		if err != nil {
			return inv, err
		}
		if n > 0 {
			inv.Removed++
		}
	}
	return inv, nil
}

// validKey reports whether k is a cache key, "<role>.<64 hex digits>": only
// such a key may become part of a purge filter.
func validKey(k string) bool {
	role, sum, ok := strings.Cut(k, ".")
	if !ok || !subjects.Role(role).Valid() || len(sum) != 64 {
		return false
	}
	for i := 0; i < len(sum); i++ {
		c := sum[i]
		if !(c >= '0' && c <= '9' || c >= 'a' && c <= 'f') {
			return false
		}
	}
	return true
}

// purge removes the messages of the bucket's stream that match filter (all
// when empty) with one request to the stream purge API, which answers with
// the count; the jetstream package's Stream.Purge drops it.
func (a *Admin) purge(ctx context.Context, filter string) (uint64, error) {
	body, err := json.Marshal(jetstream.StreamPurgeRequest{Subject: filter})
	if err != nil {
		return 0, err
	}
	if _, ok := ctx.Deadline(); !ok {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, 30*time.Second)
		defer cancel()
	}
	what := a.names.CacheBucket()
	if filter != "" {
		what += " " + filter
	}
	o := a.js.Options()
	msg, err := a.js.Conn().RequestWithContext(ctx, subjects.JSAPIPrefix(o.Domain, o.APIPrefix)+"STREAM.PURGE."+a.streamName(), body)
	if err != nil {
		return 0, fmt.Errorf("cache: purge %s: %w", what, err)
	}
	var resp struct {
		Error  *jetstream.APIError `json:"error"`
		Purged uint64              `json:"purged"`
	}
	if err := json.Unmarshal(msg.Data, &resp); err != nil {
		return 0, fmt.Errorf("cache: purge %s: bad response: %w", what, err)
	}
	if resp.Error != nil {
		if resp.Error.ErrorCode == jetstream.JSErrCodeStreamNotFound {
			return 0, fmt.Errorf("%w: %s (has a worker started with this prefix?)", ErrNoBucket, a.names.CacheBucket())
		}
		return 0, fmt.Errorf("cache: purge %s: %w", what, resp.Error)
	}
	return resp.Purged, nil
}
