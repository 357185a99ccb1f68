package tests

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/producer"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// Row 17: bodies at and over the server's max_payload (1 MiB by default).
// Over it, the producer gets "maximum payload exceeded" at once, not after
// a timeout or retries, and nothing is stored. A request just under it is
// stored, and the worker rejects it as too_large with its one DLQ entry,
// although the DLQ entry (the body plus Drover's headers) is itself over
// max_payload.
func TestFaultBodyOverMaxPayload(t *testing.T) {
	t.Parallel()
	b := setup(t)
	sim := runner.NewSim(runner.SimOptions{})
	simWorker(b, sim, 2)
	ctx := context.Background()
	limit := b.nc.MaxPayload()
	require.EqualValues(t, 1<<20, limit, "the server's default max_payload")

	body := func(n int64) []byte {
		head := `{"workflow":"wf-big","id":"big","scope":"`
		return []byte(head + strings.Repeat("x", int(n)-len(head)-2) + `"}`)
	}
	over := &nats.Msg{Subject: b.names.TaskSubject("default"), Header: nats.Header{}, Data: body(limit + 1)}
	over.Header.Set(subjects.HeaderMsgID, "wf-big/over")
	began := time.Now()
	_, err := producer.PublishMsg(ctx, b.js, over)
	require.ErrorIs(t, err, nats.ErrMaxPayload)
	require.ErrorContains(t, err, "maximum payload exceeded")
	require.Less(t, time.Since(began), time.Second, "synchronous, not retried")
	require.Zero(t, b.taskMsgs(), "nothing stored")

	// The largest request the server takes: max_payload with its headers.
	near := &nats.Msg{Subject: b.names.TaskSubject("default"), Header: nats.Header{}, Data: body(limit - 64)}
	near.Header.Set(subjects.HeaderMsgID, "wf-big/big")
	ack, err := producer.PublishMsg(ctx, b.js, near)
	require.NoError(t, err)
	rejected := b.waitRejected(1)
	require.Contains(t, rejected, ack.Sequence)
	require.Equal(t, string(subjects.ReasonTooLarge), rejected[ack.Sequence].Event.Action)
	dlq := dlqBySeq(t, b.dlq())
	require.Contains(t, dlq, ack.Sequence)
	entry := dlq[ack.Sequence]
	require.Equal(t, strconv.FormatInt(limit-64, 10), entry.Header.Get(subjects.HeaderBodyBytes), "the entry says it holds the request's first bytes")
	require.Equal(t, near.Data[:len(entry.Data)], entry.Data)
	require.Zero(t, sim.TotalCalls())
	b.oracle()

	// A worker refuses a --max-body that leaves no room under max_payload.
	_, err = worker.New(b.nc, worker.Config{Pipeline: pipeline.Config{Limits: subjects.Limits{MaxBytes: int(limit)}}})
	require.ErrorContains(t, err, "max_payload")
}
