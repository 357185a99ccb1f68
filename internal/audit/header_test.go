package audit

import (
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func headerEvent(task string) *subjects.OutboxEvent {
	return &subjects.OutboxEvent{
		ID: "ev-" + task, Workflow: "wf-1", Task: task,
		Actor: subjects.ActorOf(subjects.RoleJudge), Type: subjects.EventJudgeVerdict,
		Time: time.Date(2026, 12, 2, 4, 0, 0, 0, time.UTC), Body: []byte(`{}`),
	}
}

// A header map given back after a publish carries nothing of its event
// into the next one: not the trace context, the link or the fence.
func TestReleasedHeaderCarriesNothingOver(t *testing.T) {
	p := NewPublisher(nil, subjects.Names{})
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	for range 50 { // sync.Pool may drop what it is given; a reuse shows in some rounds
		first := p.Msg(headerEvent("T1"), tp)
		first.Header[subjects.HeaderPrev] = []string{"a-link"}
		first.Header["Nats-Expected-Last-Subject-Sequence"] = []string{"7"}
		first.Header["Nats-Expected-Last-Subject-Sequence-Subject"] = []string{"drover.audit.wf-1.T1.>"}
		releaseHeader(first.Header)

		next := p.Msg(headerEvent("T2"), "")
		require.Len(t, next.Header, 9, "the nine headers of an event without a trace context: %v", next.Header)
		for _, k := range []string{subjects.HeaderTraceparent, subjects.HeaderPrev, "Nats-Expected-Last-Subject-Sequence", "Nats-Expected-Last-Subject-Sequence-Subject"} {
			require.NotContains(t, next.Header, k)
		}
		require.Equal(t, "ev-T2", next.Header.Get(subjects.HeaderMsgID))
		require.Equal(t, "wf-1/T2", next.Header.Get(subjects.HeaderCESubject))
		releaseHeader(next.Header)
	}
}

// A map grown past an event's headers is not kept.
func TestReleaseHeaderDropsAnOversizedMap(t *testing.T) {
	h := make(nats.Header, eventHeaders+1)
	for i := range eventHeaders + 1 {
		h[string(rune('a'+i))] = []string{"v"}
	}
	releaseHeader(h)
	require.Len(t, h, eventHeaders+1, "an oversized map is left as it is, to the collector")
}

// BenchmarkMsg is building an event's message and giving its header back,
// as a publish does.
func BenchmarkMsg(b *testing.B) {
	p := NewPublisher(nil, subjects.Names{})
	ev := headerEvent("T1")
	const tp = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
	b.ReportAllocs()
	for b.Loop() {
		msg := p.Msg(ev, tp)
		msg.Header[subjects.HeaderPrev] = []string{"a-link"}
		releaseHeader(msg.Header)
	}
}
