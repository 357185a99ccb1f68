package benchlab

import (
	"context"
	"encoding/json"
	"maps"
	"regexp"
	"slices"
	"strconv"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// Contract-ops stores what Drover stores for a one-round task, in size:
// each value is as long as its counterpart in the data Drover's encoders
// make, and each event's subject is as long as Drover's, with the same
// header keys and values as long (Drover-Prev empty on the first event and
// a link's length after it).
func TestOpsStoresDroversSizesAndHeaders(t *testing.T) {
	cfg := withDefaults(Config{Tasks: 3})
	m := newDataMaker(cfg)
	v, err := newOpsValues(m)
	require.NoError(t, err)
	msg, err := m.request(opsSampleTask)
	require.NoError(t, err)
	task := newOpsTask(context.Background(), &raw{cfg: cfg, auditTo: "p.audit."}, opsSampleTask, m.wf)
	task.v = v
	d, err := m.make(context.Background(), opsSampleTask, msg.Data, "p.audit.", task.key)
	require.NoError(t, err)

	// The sample and d were made at different instants, and RFC 3339 times
	// drop trailing zeros from their fractions: each time in a value (and
	// in the base64 of the events its outbox holds) may differ in length
	// by up to nine bytes (twelve in base64). A state has two times of its
	// own and two per event in its outbox; an event one.
	const timeSlack = 12
	require.InDelta(t, len(d.first), len(v.first), (2+2*2)*timeSlack, "the first state")
	require.InDelta(t, len(d.mid), len(v.mid), (2+1*2)*timeSlack, "the state after the implementer")
	require.InDelta(t, len(d.final), len(v.final), (2+2*2)*timeSlack, "the final state")
	cached, err := cachedState(d.first, d.mid, d.final)
	require.NoError(t, err)
	require.InDelta(t, len(cached), len(v.cached), (2+5*2)*timeSlack, "a fully cached task's state")
	var st subjects.TaskState
	require.NoError(t, json.Unmarshal(cached, &st))
	require.Equal(t, subjects.StateCompleted, st.State)
	require.Len(t, st.Outbox, len(d.events), "a fully cached task commits all its events at once")
	for k, ev := range d.events {
		require.Equal(t, ev.Data, st.Outbox[k].Event.Body, "event %d", k)
	}
	for r := range taskRoles {
		require.Len(t, v.entries[r], len(d.entries[r]), "the %s's entry", taskRoles[r])
		require.True(t, json.Valid(v.entries[r]))
	}
	for k, want := range d.events {
		got := task.event(k)
		require.Len(t, got.Subject, len(want.Subject), "event %d: %s against %s", k, got.Subject, want.Subject)
		require.InDelta(t, len(want.Data), len(got.Data), timeSlack, "event %d", k)
		require.True(t, json.Valid(got.Data), "event %d", k)
		require.Equal(t, slices.Sorted(maps.Keys(want.Header)), slices.Sorted(maps.Keys(got.Header)), "event %d", k)
		for _, h := range []string{subjects.HeaderMsgID, subjects.HeaderCEID, subjects.HeaderCESubject, subjects.HeaderCESource, subjects.HeaderCEType, subjects.HeaderPrev} {
			require.Len(t, got.Header.Get(h), len(want.Header.Get(h)), "event %d, header %s: %q against %q", k, h, got.Header.Get(h), want.Header.Get(h))
		}
	}
}

// Contract-ops' cache keys have the contract's shape, <role>.<sha256 hex>,
// are distinct, and spread over the hex digits as a hash's are: the
// server's subject tree costs more with such keys than with sequential
// ones, so sequential keys would flatter contract-ops.
func TestCacheKeyHasTheContractsShape(t *testing.T) {
	shape := regexp.MustCompile(`^(planner|implementer|judge)\.[0-9a-f]{64}$`)
	const tasks = 20000
	seen := make(map[string]bool, tasks*len(taskRoles))
	var lead [3][16]int // per role, how often each hex digit leads the hash
	for i := range tasks {
		for r, role := range taskRoles {
			k := cacheKey(r, i)
			require.Regexp(t, shape, k)
			require.Equal(t, string(role)+".", k[:len(role)+1])
			require.False(t, seen[k], "key %s repeats", k)
			seen[k] = true
			d, err := strconv.ParseUint(k[len(role)+1:len(role)+2], 16, 8)
			require.NoError(t, err)
			lead[r][d]++
		}
	}
	// 1,250 expected per digit; a sequential key (one leading digit) or a
	// few distinct ones fail this by far.
	for r := range lead {
		for dgt, n := range lead[r] {
			require.InDelta(t, tasks/16, n, 200, "role %s, leading digit %x", taskRoles[r], dgt)
		}
	}
}
