package benchlab

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
)

// BenchmarkAuditEventsPerTask compares two ways of storing a fully cached
// task's five audit events on a server that fsyncs before every ack (the
// embedded default), 1,000 tasks from 16 publishers:
//
//   - fenced: five publishes one after another, each fenced on the
//     task's last sequence (what Drover does);
//   - atomic: one atomic batch (Nats-Batch-Id, the fence on its first
//     message, the commit on its last), which would make one round trip
//     of five.
//
// It reports the wall time of the 1,000 tasks and the stored events per
// second. On a file stream the server stages an atomic batch in a store
// of its own before it commits it, so the batch costs more fsyncs, not
// fewer: this is why Drover publishes events one by one.
//
//	go test -run '^$' -bench AuditEventsPerTask -benchtime 3x ./internal/benchlab/
func BenchmarkAuditEventsPerTask(b *testing.B) {
	const tasks, events, publishers = 1000, 5, 16
	srv := natstest.Server(b)
	nc, js := natstest.Connect(b, srv.ClientURL())
	body := padded(1000, "event_type", "bench") // about an event with its headers
	for _, mode := range []string{"fenced", "atomic"} {
		b.Run(mode, func(b *testing.B) {
			var elapsed time.Duration
			for n := range b.N {
				name := fmt.Sprintf("EVENTS_%s_%d", mode, n)
				ctx := context.Background()
				_, err := broker.CreateStream(ctx, js, jetstream.StreamConfig{Name: name, Subjects: []string{name + ".>"},
					Storage: jetstream.FileStorage, AllowAtomicPublish: true})
				require.NoError(b, err)
				work := make(chan int)
				var wg sync.WaitGroup
				errs := make(chan error, publishers)
				start := time.Now()
				for range publishers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i := range work {
							pub := fencedEvents
							if mode == "atomic" {
								pub = atomicEvents
							}
							if err := pub(ctx, nc, js, name+".t"+strconv.Itoa(i), events, body); err != nil {
								errs <- err
								return
							}
						}
					}()
				}
				for i := range tasks {
					work <- i
				}
				close(work)
				wg.Wait()
				elapsed += time.Since(start)
				close(errs)
				require.NoError(b, <-errs)
				st, err := js.Stream(ctx, name)
				require.NoError(b, err)
				require.EqualValues(b, tasks*events, st.CachedInfo().State.Msgs)
				require.NoError(b, js.DeleteStream(ctx, name))
			}
			per := elapsed / time.Duration(b.N)
			b.ReportMetric(per.Seconds(), "s/1000tasks")
			b.ReportMetric(float64(tasks*events)/per.Seconds(), "events/s")
		})
	}
}

// fencedEvents publishes n events on subj one after another, each fenced
// on the sequence of the one before.
func fencedEvents(ctx context.Context, _ *nats.Conn, js jetstream.JetStream, subj string, n int, body []byte) error {
	var seq uint64
	for j := range n {
		ack, err := js.PublishMsg(ctx, &nats.Msg{Subject: subj + "." + strconv.Itoa(j), Data: body},
			jetstream.WithExpectLastSequenceForSubject(seq, subj+".>"), jetstream.WithMsgID(subj+"/"+strconv.Itoa(j)))
		if err != nil {
			return err
		}
		seq = ack.Sequence
	}
	return nil
}

// atomicEvents publishes n events on subj as one atomic batch, fenced on
// its first message.
func atomicEvents(_ context.Context, nc *nats.Conn, _ jetstream.JetStream, subj string, n int, body []byte) error {
	for j := range n {
		m := nats.NewMsg(subj + "." + strconv.Itoa(j))
		m.Data = body
		m.Header.Set("Nats-Batch-Id", subj)
		m.Header.Set("Nats-Batch-Sequence", strconv.Itoa(j+1))
		m.Header.Set(jetstream.MsgIDHeader, subj+"/"+strconv.Itoa(j))
		if j == 0 {
			m.Header.Set(jetstream.ExpectedLastSubjSeqHeader, "0")
			m.Header.Set("Nats-Expected-Last-Subject-Sequence-Subject", subj+".>")
		}
		if j < n-1 {
			if err := nc.PublishMsg(m); err != nil {
				return err
			}
			continue
		}
		m.Header.Set("Nats-Batch-Commit", "1")
		r, err := nc.RequestMsg(m, 30*time.Second)
		if err != nil {
			return err
		}
		var ack struct {
			Error *struct {
				Description string `json:"description"`
			} `json:"error"`
		}
		if err := json.Unmarshal(r.Data, &ack); err != nil {
			return err
		}
		if ack.Error != nil {
			return fmt.Errorf("atomic batch %s: %s", subj, ack.Error.Description)
		}
	}
	return nil
}
