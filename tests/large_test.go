package tests

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/blobs"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// TestLargeMetadata: a request with a metadata field far over
// the inline limit completes, its task_accepted event refers to the field
// by blob, the blob holds the field's bytes, and no audit message or state
// value comes near the server's message limit.
func TestLargeMetadata(t *testing.T) {
	t.Parallel()
	b := setup(t)
	simWorker(b, runner.NewSim(runner.SimOptions{}), 2)

	big := strings.Repeat("0123456789abcdef", (100<<10)/16) // 100 KiB
	req := task("large-wf", "T.big/1")
	req.Metadata = map[string]json.RawMessage{"big": json.RawMessage(`"` + big + `"`)}
	after := b.submit(req)

	got := b.waitTerminal("large-wf", after, 1)
	require.Equal(t, subjects.EventTaskCompleted, got["T.big/1"].EventType, got["T.big/1"].Error)

	var accepted *subjects.AuditEvent
	for _, ev := range b.events("large-wf") {
		if ev.EventType == subjects.EventTaskAccepted {
			accepted = &ev
		}
	}
	require.NotNil(t, accepted, "task_accepted was written")

	var input map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(accepted.Input, &input))
	require.Equal(t, `"T.big/1"`, string(input["id"]), "small fields stay inline")
	var ref blobs.Ref
	require.NoError(t, json.Unmarshal(input["metadata"], &ref))
	require.True(t, ref.Truncated)
	original := `{"big":"` + big + `"}`
	sum := sha256.Sum256([]byte(original))
	require.Equal(t, hex.EncodeToString(sum[:]), ref.Blob)
	require.Equal(t, len(original), ref.Bytes)
	require.Equal(t, original[:blobs.HeadBytes], ref.Head)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	obj, err := b.js.ObjectStore(ctx, b.names.BlobStore())
	require.NoError(t, err)
	stored, err := obj.GetBytes(ctx, ref.Blob)
	require.NoError(t, err)
	require.Equal(t, original, string(stored), "the blob holds the original bytes")

	limit := int(b.nc.MaxPayload())
	require.Equal(t, 1<<20, limit)
	cons, err := b.js.OrderedConsumer(ctx, b.names.AuditStream(), jetstream.OrderedConsumerConfig{
		FilterSubjects: []string{b.names.AuditFilter("large-wf", "", "", "")},
	})
	require.NoError(t, err)
	n := 0
	for {
		batch, err := cons.FetchNoWait(100)
		require.NoError(t, err)
		k := 0
		for m := range batch.Messages() {
			k++
			size := len(m.Subject()) + len(m.Data())
			for h, vs := range m.Headers() {
				for _, v := range vs {
					size += len(h) + len(v) + 4
				}
			}
			require.Less(t, size, limit, "audit message %s", m.Subject())
			require.Less(t, len(m.Data()), blobs.Limit+64<<10, "a 100 KiB field is never inlined: %s", m.Subject())
		}
		require.NoError(t, batch.Error())
		if k == 0 {
			break
		}
		n += k
	}
	require.GreaterOrEqual(t, n, 5, "accepted, three role events, completed")

	kv, err := b.js.KeyValue(ctx, b.names.StateBucket())
	require.NoError(t, err)
	e, err := kv.Get(ctx, subjects.StateKey("large-wf", "T.big/1"))
	require.NoError(t, err)
	require.Less(t, len(e.Value()), limit, "the state value fits in a message")
}
