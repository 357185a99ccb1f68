package console

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

func TestColumn(t *testing.T) {
	for _, tc := range []struct {
		state, stage, worker, want string
	}{
		{subjects.StateCompleted, subjects.StageDone, "w", ColDone},
		{subjects.StateFailed, "judge", "w", ColFailed},
		{subjects.StateCancelled, "planner", "", ColFailed},
		{subjects.StateRunning, "planner", "", ColQueued},
		{subjects.StatePaused, "planner", "", ColQueued},
		{subjects.StateRunning, "planner", "w", ColPlanning},
		{subjects.StateRunning, "", "w", ColPlanning},
		{subjects.StateRunning, "implementer", "w", ColImplementing},
		{subjects.StatePaused, "judge", "w", ColJudging},
		{subjects.StateRunning, subjects.StageDone, "w", ColDone},
		{subjects.StateRunning, "review", "w", ColReview},
	} {
		assert.Equal(t, tc.want, Column(tc.state, tc.stage, tc.worker), "%+v", tc)
	}
}

func TestHighlight(t *testing.T) {
	diff := "diff --git a/x.go b/x.go\nindex 1..2\n--- a/x.go\n+++ b/x.go\n@@ -1,2 +1,2 @@\n ctx\n-old <b>\n+new <script>\n"
	lines, truncated := Highlight(diff)
	require.False(t, truncated)
	var classes []string
	for _, l := range lines {
		classes = append(classes, l.Class)
	}
	assert.Equal(t, []string{"file", "file", "file", "file", "hunk", "ctx", "del", "add"}, classes)
	assert.Equal(t, "+new <script>", lines[7].Text, "text stays text: the template escapes it")

	var big []byte
	for range maxDiffLines + 10 {
		big = append(big, "+x\n"...)
	}
	lines, truncated = Highlight(string(big))
	assert.True(t, truncated)
	assert.Len(t, lines, maxDiffLines)
}

func TestFindDiff(t *testing.T) {
	d := "--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+b\n"
	for _, tc := range []struct {
		name string
		raw  any
		want string
	}{
		{"patch field", map[string]any{"patch": d}, d},
		{"diff field", map[string]any{"diff": d}, d},
		{"nested change", map[string]any{"change": map[string]any{"patch": d}}, d},
		{"change that is no diff", map[string]any{"change": "edited three files"}, ""},
		{"absent", map[string]any{"files": []string{"a"}}, ""},
	} {
		raw, _ := json.Marshal(tc.raw)
		assert.Equal(t, tc.want, findDiff(raw), tc.name)
	}
	assert.Empty(t, findDiff(json.RawMessage(`not json`)))
}

func TestParseWhen(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		in   string
		want time.Time
		err  bool
	}{
		{"", time.Time{}, false},
		{"15m", now.Add(-15 * time.Minute), false},
		{"2026-01-01T00:00:00Z", time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC), false},
		{"yesterday", time.Time{}, true},
	} {
		got, err := parseWhen(tc.in, now)
		if tc.err {
			require.Error(t, err, tc.in)
			continue
		}
		require.NoError(t, err, tc.in)
		assert.True(t, tc.want.Equal(got), "%s: %v", tc.in, got)
	}
}

func TestShellQuote(t *testing.T) {
	for in, want := range map[string]string{
		"wf-1":      "wf-1",
		"T1.2":      "T1.2",
		"a b":       "'a b'",
		"it's":      `'it'\''s'`,
		"$(rm -rf)": "'$(rm -rf)'",
		"":          "''",
	} {
		assert.Equal(t, want, shellQuote(in), in)
	}
}

// A client that does not read is dropped at once when its buffer is full;
// the hub and the other clients go on.
func TestHubDropsSlowClient(t *testing.T) {
	h := newHub()
	slow, fast := h.subscribe(), h.subscribe()
	for i := range clientBuffer + 1 {
		h.push(map[string]any{"k": "a", "q": i})
		h.flush()
		natstest.Recv(t, fast.ch, 30*time.Second)
	}
	select {
	case <-slow.dropped:
	default:
		t.Fatal("the slow client was not dropped")
	}
	assert.Equal(t, 1, h.clientCount())
	h.push(map[string]any{"k": "a"})
	h.flush()
	assert.JSONEq(t, `[{"k":"a"}]`, string(natstest.Recv(t, fast.ch, 30*time.Second)))
}

// A burst larger than a batch is cut to maxBatch items and a "lost" count.
func TestHubBatchBound(t *testing.T) {
	h := newHub()
	c := h.subscribe()
	for i := range maxBatch + 5 {
		h.push(map[string]any{"q": i})
	}
	h.flush()
	var items []map[string]any
	require.NoError(t, json.Unmarshal(natstest.Recv(t, c.ch, 30*time.Second), &items))
	require.Len(t, items, maxBatch+1)
	assert.Equal(t, map[string]any{"k": "lost", "n": float64(5)}, items[maxBatch])
}

// The mirror keeps a workflow's counts by column as tasks move.
func TestMirrorCounts(t *testing.T) {
	m := newMirror()
	put := func(task, state, stage string) {
		b, _ := json.Marshal(subjects.TaskState{Workflow: "wf", Task: task, State: state, Stage: stage, Worker: "w"})
		m.apply("wf."+subjects.Token(task), b, false)
	}
	put("a", subjects.StateRunning, "planner")
	put("b", subjects.StateRunning, "judge")
	put("a", subjects.StateRunning, "implementer")
	put("b", subjects.StateCompleted, subjects.StageDone)
	v, cards, ok := m.board("wf", 0, 10)
	require.True(t, ok)
	assert.Equal(t, map[string]int{ColPlanning: 0, ColImplementing: 1, ColJudging: 0, ColDone: 1}, v.Cols)
	assert.Equal(t, 2, v.Total)
	assert.Equal(t, 1, v.Open)
	assert.Equal(t, "a", cards[ColImplementing][0].ID)
	m.apply("wf.a", nil, true)
	v, _, _ = m.board("wf", 0, 10)
	assert.Equal(t, 1, v.Total)
	assert.Equal(t, 0, v.Cols[ColImplementing])
}

// The changes since a revision are what a page rendered at it missed.
func TestMirrorSince(t *testing.T) {
	m := newMirror()
	put := func(wf, task, stage string) {
		b, _ := json.Marshal(subjects.TaskState{Workflow: wf, Task: task, State: subjects.StateRunning, Stage: stage, Worker: "w"})
		m.apply(subjects.StateKey(wf, task), b, false)
	}
	put("wf", "a", "planner")
	put("wf", "b", "planner")
	put("other", "c", "planner")
	rev := m.rev()
	items, ok := m.since("wf", rev, 10)
	require.True(t, ok)
	assert.Empty(t, items, "nothing changed since")

	put("wf", "b", "judge")
	put("other", "c", "judge")
	items, ok = m.since("wf", rev, 10)
	require.True(t, ok)
	require.Len(t, items, 2, "the workflow and its one changed task")
	assert.Equal(t, "w", items[0]["k"])
	assert.Equal(t, "b", items[1]["t"])
	assert.Equal(t, ColJudging, items[1]["col"])

	items, ok = m.since("", rev, 10)
	require.True(t, ok)
	assert.Len(t, items, 2, "both workflows changed")

	_, ok = m.since("wf", 0, 2)
	assert.False(t, ok, "more than the limit: the page reloads")
}

func TestHubAuditAfter(t *testing.T) {
	h := newHub()
	for seq := uint64(1); seq <= recentAudit+10; seq++ {
		h.pushAudit(seq, map[string]any{"q": seq})
	}
	got := h.auditAfter(recentAudit + 7)
	require.Len(t, got, 3)
	assert.JSONEq(t, `{"q": 2008}`, string(got[0]))
	assert.Len(t, h.auditAfter(0), recentAudit, "the ring keeps the latest only")
}
