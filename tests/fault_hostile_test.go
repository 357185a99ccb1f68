package tests

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/subjects"
)

// Scenario: bad and hostile bodies against two worker processes. Every one
// is rejected on its first delivery with the contract's reason, the same
// on whichever worker decides it (each body is sent twice), nothing panics,
// and the workers' memory stays bounded.
func TestFaultHostileBodies(t *testing.T) {
	t.Parallel()
	b := setup(t)
	common := []string{"--concurrency", "4"}
	w1 := b.startProc(common...)
	w2 := b.startProc(common...)
	deep := strings.Repeat(`{"a":`, 50_000) + `1` + strings.Repeat(`}`, 50_000)
	wideKeys := `{"workflow":"wf-hostile","id":"wide","scope":"s","metadata":{` + strings.Repeat(`"k":1,`, 1) + `"k":2}}`
	cases := []struct {
		name   string
		body   string
		reason subjects.Reason
	}{
		{"not json", `{"workflow": "wf-hostile", "id": "x", `, subjects.ReasonInvalidJSON},
		{"array", `[1,2,3]`, subjects.ReasonInvalidJSON},
		{"missing scope", `{"workflow":"wf-hostile","id":"noscope"}`, subjects.ReasonMissingField},
		{"duplicate keys", `{"workflow":"wf-hostile","id":"dup","id":"dup2","scope":"s"}`, subjects.ReasonInvalidJSON},
		{"nested duplicate keys", wideKeys, subjects.ReasonInvalidJSON},
		{"case-variant keys", `{"Workflow":"wf-hostile","ID":"cv","Scope":"s"}`, subjects.ReasonMissingField},
		{"deep nesting", deep, subjects.ReasonInvalidJSON},
		{"invalid utf-8", "{\"workflow\":\"wf-hostile\",\"id\":\"u\xff\",\"scope\":\"s\"}", subjects.ReasonInvalidJSON},
		{"huge number", `{"workflow":"wf-hostile","id":"num","scope":"s","max_attempts":1` + strings.Repeat("0", 5000) + `}`, subjects.ReasonInvalidValue},
		{"huge float", `{"workflow":"wf-hostile","id":"flt","scope":"s","max_attempts":1e999}`, subjects.ReasonInvalidValue},
		{"wrong type", `{"workflow":"wf-hostile","id":7,"scope":"s"}`, subjects.ReasonInvalidValue},
		{"whitespace id", `{"workflow":"wf-hostile","id":"a b","scope":"s"}`, subjects.ReasonInvalidValue},
		{"reserved id", `{"workflow":"wf-hostile","id":"_","scope":"s"}`, subjects.ReasonInvalidValue},
		{"too large", `{"workflow":"wf-hostile","id":"big","scope":"` + strings.Repeat("x", 600<<10) + `"}`, subjects.ReasonTooLarge},
	}
	want := map[uint64]subjects.Reason{}
	for _, c := range cases {
		for range 2 {
			want[b.publishRaw([]byte(c.body))] = c.reason
		}
	}
	// A good task after them still runs.
	after := b.submit(task("wf-good", "ok"))
	b.waitTerminal("wf-good", after, 1)

	got := map[uint64]subjects.Reason{}
	require.EventuallyWithT(t, func(c *assert.CollectT) {
		msgs, err := b.readDLQ()
		if !assert.NoError(c, err) {
			return
		}
		for _, m := range msgs {
			var seq uint64
			_, err := fmt.Sscan(m.Header.Get(subjects.HeaderStreamSeq), &seq)
			if !assert.NoError(c, err, "%s of DLQ message %q", subjects.HeaderStreamSeq, m.Subject) {
				return
			}
			got[seq] = subjects.Reason(m.Header.Get(subjects.HeaderReason))
		}
		assert.Len(c, got, len(want))
	}, 60*time.Second, 50*time.Millisecond)
	require.Equal(t, want, got)

	// Each task_rejected follows its DLQ entry: wait for the last ones.
	require.Eventually(t, func() bool {
		rejected := 0
		err := audit.Replay(context.Background(), b.js, b.names, audit.Query{Type: subjects.EventTaskRejected}, func(r audit.Record) error {
			if r.Err == nil && r.Event.Attempt == 0 {
				rejected++
			}
			return nil
		})
		return err == nil && rejected == len(want)
	}, 30*time.Second, 50*time.Millisecond, "one task_rejected, attempt 0, per refused request")
	for _, w := range []*proc{w1, w2} {
		select {
		case <-w.done:
			t.Fatalf("a worker exited: %v\n%s", w.exitErr, w.stderrText())
		default:
		}
		require.Less(t, w.rssBytes(), int64(512<<20), "worker memory")
	}
	b.oracle()
}
