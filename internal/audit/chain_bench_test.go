package audit_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/subjects"
)

// BenchmarkLink is what the hash chain costs a worker per event: the link
// of an event of usual size (a judge verdict with its output), which the
// publisher computes once per event it stores.
func BenchmarkLink(b *testing.B) {
	ev := rdEvent("wf-001", "T000001", 1, subjects.ActorOf(subjects.RoleJudge), subjects.EventJudgeVerdict, 0, time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC))
	ev.Action, ev.Reasoning = subjects.VerdictApprove, "a sentence or two of reasoning, as a model would write it"
	ev.Output = json.RawMessage(`{"summary":"what the role produced, in a few words"}`)
	oe, err := subjects.EncodeEvent(&ev)
	if err != nil {
		b.Fatal(err)
	}
	pub := audit.NewPublisher(nil, rdNames)
	msg := pub.Msg(oe, "")
	prev := audit.LinkHex(msg.Subject, "", msg.Data)
	b.SetBytes(int64(len(msg.Data)))
	b.ReportAllocs()
	for b.Loop() {
		prev = audit.LinkHex(msg.Subject, prev, msg.Data)
	}
}
