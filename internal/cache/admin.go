package cache

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/streamread"
	"github.com/droverhq/drover/subjects"
)

// ErrNoBucket is returned when the cache bucket does not exist yet: no
// worker has provisioned this deployment.
var ErrNoBucket = errors.New("cache: bucket does not exist")

// ErrUnknownTask is returned by InvalidateTask for a task with neither state
// nor audit events: nothing can name its cache keys.
var ErrUnknownTask = errors.New("cache: task has no state and no audit events")

// Admin inspects and invalidates the cache through the bucket's underlying
// stream, "KV_<bucket>": counting and purging by subject filter, so removing
// a role costs one request whatever its size.
type Admin struct {
	js    jetstream.JetStream
	names subjects.Names
}

// NewAdmin returns an Admin for the deployment of names.
func NewAdmin(js jetstream.JetStream, names subjects.Names) *Admin {
	return &Admin{js: js, names: names}
}

// RoleStats are the live entries of one role.
type RoleStats struct {
	Role    subjects.Role `json:"role"`
	Entries uint64        `json:"entries"`
	// Bytes is the sum of the entries' value sizes.
	Bytes uint64 `json:"bytes"`
}

// Stats describe the cache bucket.
type Stats struct {
	Bucket string `json:"bucket"`
	// Entries and Bytes are the sums over Roles.
	Entries uint64 `json:"entries"`
	Bytes   uint64 `json:"bytes"`
	// StoredBytes is what the bucket's stream holds, keys and headers
	// included.
	StoredBytes uint64 `json:"stored_bytes"`
	// TTL is how long an entry lives, e.g. "24h0m0s".
	TTL   string      `json:"ttl"`
	Roles []RoleStats `json:"roles"`
}

// statsBatch bounds one fetch of the stats scan.
const statsBatch = 1000

// statsWait bounds the wait for a batch of the stats scan; a short batch
// means entries expired while they were read.
const statsWait = 2 * time.Second

// msgSizeHeader carries a message's body size when only headers are sent.
const msgSizeHeader = "Nats-Msg-Size"

// kvOperationHeader marks a KV delete or purge marker.
const kvOperationHeader = "KV-Operation"

// Stats counts the live entries and their value bytes per role. It reads
// each role's keys once, headers only (the server sends each value's size,
// not the value), through a consumer filtered to the role's subjects that
// delivers the last message per key, so its cost follows the number of
// entries, never their size.
func (a *Admin) Stats(ctx context.Context) (Stats, error) {
	s, err := a.stream(ctx)
	if err != nil {
		return Stats{}, err
	}
	info := s.CachedInfo()
	st := Stats{Bucket: a.names.CacheBucket(), StoredBytes: info.State.Bytes, TTL: info.Config.MaxAge.String()}
	for _, r := range subjects.Roles {
		rs, err := a.roleStats(ctx, s, r)
		if err != nil {
			return Stats{}, err
		}
		st.Roles = append(st.Roles, rs)
		st.Entries += rs.Entries
		st.Bytes += rs.Bytes
	}
	return st, nil
}

// roleStats scans one role's keys, headers only.
func (a *Admin) roleStats(ctx context.Context, s jetstream.Stream, role subjects.Role) (RoleStats, error) {
	rs := RoleStats{Role: role}
	cons, err := s.CreateConsumer(ctx, jetstream.ConsumerConfig{
		FilterSubject:     a.roleSubject(role),
		DeliverPolicy:     jetstream.DeliverLastPerSubjectPolicy,
		AckPolicy:         jetstream.AckNonePolicy,
		HeadersOnly:       true,
		MemoryStorage:     true,
		InactiveThreshold: time.Minute,
	})
	if err != nil {
		return rs, fmt.Errorf("cache: stats of %s: %w", role, err)
	}
	defer streamread.DeleteConsumer(ctx, s, cons)
	pending := cons.CachedInfo().NumPending
	for pending > 0 {
		batch, err := cons.Fetch(int(min(pending, statsBatch)), jetstream.FetchMaxWait(statsWait))
		if err != nil {
			return rs, fmt.Errorf("cache: stats of %s: %w", role, err)
		}
		n := 0
		for m := range batch.Messages() {
			n++
			md, err := m.Metadata()
			if err != nil {
				return rs, fmt.Errorf("cache: stats of %s: %w", role, err)
			}
			pending = md.NumPending
			if op := m.Headers().Get(kvOperationHeader); op != "" {
				continue // a delete or purge marker is no entry
			}
			size, _ := strconv.ParseUint(m.Headers().Get(msgSizeHeader), 10, 64)
			rs.Entries++
			rs.Bytes += size
		}
		if err := batch.Error(); err != nil && !errors.Is(err, jetstream.ErrNoMessages) && !errors.Is(err, nats.ErrTimeout) {
			return rs, fmt.Errorf("cache: stats of %s: %w", role, err)
		}
		if n == 0 {
			break // the rest expired while we read
		}
	}
	return rs, nil
}

// streamName is the bucket's underlying stream, "KV_<bucket>".
func (a *Admin) streamName() string { return "KV_" + a.names.CacheBucket() }

// roleSubject matches every key of role, "$KV.<bucket>.<role>.>".
func (a *Admin) roleSubject(role subjects.Role) string {
	return "$KV." + a.names.CacheBucket() + "." + string(role) + ".>"
}

// keySubject is the subject of one key.
func (a *Admin) keySubject(key string) string { return "$KV." + a.names.CacheBucket() + "." + key }

// stream returns the bucket's stream, or ErrNoBucket.
func (a *Admin) stream(ctx context.Context) (jetstream.Stream, error) {
	s, err := a.js.Stream(ctx, a.streamName())
	if errors.Is(err, jetstream.ErrStreamNotFound) {
		return nil, fmt.Errorf("%w: %s (has a worker started with this prefix?)", ErrNoBucket, a.names.CacheBucket())
	}
	if err != nil {
		return nil, fmt.Errorf("cache: bucket %s: %w", a.names.CacheBucket(), err)
	}
	return s, nil
}
