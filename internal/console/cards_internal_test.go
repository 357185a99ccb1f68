package console

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// A running workflow whose tasks all ended shows as finished; no other
// state is changed, and a workflow with open tasks or none keeps its own.
func TestDisplayState(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct {
		state       string
		total, open int
		want        string
	}{
		"running, tasks open":            {subjects.StateRunning, 3, 1, subjects.StateRunning},
		"running, all ended":             {subjects.StateRunning, 3, 0, StateFinished},
		"running, one task, ended":       {subjects.StateRunning, 1, 0, StateFinished},
		"running, no task yet":           {subjects.StateRunning, 0, 0, subjects.StateRunning},
		"no workflow key, all ended":     {"", 2, 0, StateFinished},
		"no workflow key, tasks open":    {"", 2, 2, subjects.StateRunning},
		"paused, all ended":              {subjects.StatePaused, 2, 0, subjects.StatePaused},
		"paused, tasks open":             {subjects.StatePaused, 2, 1, subjects.StatePaused},
		"cancelled, all ended":           {subjects.StateCancelled, 2, 0, subjects.StateCancelled},
		"cancelled, tasks open":          {subjects.StateCancelled, 2, 2, subjects.StateCancelled},
		"running, counts out of step":    {subjects.StateRunning, 2, -1, StateFinished},
		"running, thousands, one open":   {subjects.StateRunning, 10_000, 1, subjects.StateRunning},
		"running, thousands, none open":  {subjects.StateRunning, 10_000, 0, StateFinished},
		"an unknown state is kept as is": {"draining", 2, 0, "draining"},
	} {
		require.Equal(t, tc.want, displayState(tc.state, tc.total, tc.open), name)
	}
}

// The mirror's workflow is finished once its last task ends, and running
// again when a new task arrives.
func TestMirrorWorkflowFinished(t *testing.T) {
	t.Parallel()
	m := newMirror()
	put := func(task, state string) {
		b, _ := json.Marshal(subjects.TaskState{Workflow: "wf", Task: task, State: state, Stage: "judge", Worker: "w1"})
		m.apply("wf."+task, b, false)
	}
	shown := func() string { return m.workflows()[0].Display }
	put("T1", subjects.StateRunning)
	put("T2", subjects.StateRunning)
	require.Equal(t, subjects.StateRunning, shown())
	put("T1", subjects.StateCompleted)
	require.Equal(t, subjects.StateRunning, shown())
	put("T2", subjects.StateFailed)
	require.Equal(t, StateFinished, shown())
	put("T3", subjects.StateRunning)
	require.Equal(t, subjects.StateRunning, shown())
}

func TestTitleOf(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 100)
	for name, tc := range map[string]struct{ scope, want string }{
		"one line":                {"Add a health endpoint", "Add a health endpoint"},
		"first line of several":   {"Add /livez\n\nIt answers 200.", "Add /livez"},
		"blank lines first":       {"\n  \r\n  Fix the race  \nmore", "Fix the race"},
		"control characters gone": {"a\x1b[31mred\x07", "a[31mred"},
		"bounded on a rune":       {long, strings.Repeat("é", 60) + "…"},
		"markup kept as text":     {"<script>x</script>", "<script>x</script>"},
		"empty":                   {"  \n ", ""},
	} {
		require.Equal(t, tc.want, titleOf(tc.scope), name)
	}
}

func TestAgentOf(t *testing.T) {
	t.Parallel()
	for name, tc := range map[string]struct{ md, want string }{
		"preset":          {`{"agent": "claude-code", "runner": "exec"}`, "claude-code"},
		"runner":          {`{"runner": "my-agent/v2"}`, "my-agent/v2"},
		"openai model":    {`{"model": "gpt-5"}`, "model gpt-5"},
		"none":            {`{"usage": {}}`, ""},
		"not an object":   {`"x"`, ""},
		"empty agent":     {`{"agent": " ", "runner": "r"}`, "r"},
		"bounded":         {`{"agent": "` + strings.Repeat("a", 100) + `"}`, strings.Repeat("a", maxAgent) + "…"},
		"not a string":    {`{"agent": 7}`, ""},
		"control removed": {`{"agent": "a\u001bb"}`, "ab"},
	} {
		require.Equal(t, tc.want, agentOf(json.RawMessage(tc.md)), name)
	}
}

// A note read before its task's state waits for it; the first title stays
// and the latest agent wins, whatever order the events are read in.
func TestMirrorNotes(t *testing.T) {
	t.Parallel()
	m := newMirror()
	require.Nil(t, m.note("wf", "T1", note{title: "Fix it", seq: 5}))
	require.Nil(t, m.note("wf", "T1", note{agent: "codex", seq: 9}))
	b, _ := json.Marshal(subjects.TaskState{Workflow: "wf", Task: "T1", State: subjects.StateRunning, Worker: "w1",
		StartedAt: time.Now().Add(-time.Minute)})
	item := m.apply("wf.T1", b, false)
	require.Equal(t, "Fix it", item["ti"])
	require.Equal(t, "codex", item["ag"])
	require.Empty(t, m.pending)
	require.Nil(t, m.note("wf", "T1", note{agent: "older", seq: 7}), "an older event does not overwrite")
	require.Nil(t, m.note("wf", "T1", note{title: "another", seq: 10}), "the first title stays")
	item = m.note("wf", "T1", note{agent: "claude-code", seq: 12})
	require.Equal(t, "claude-code", item["ag"])
	_, cards, ok := m.board("wf", 0, 10)
	require.True(t, ok)
	c := cards[ColPlanning][0]
	require.Equal(t, []string{"Fix it", "claude-code"}, []string{c.Title, c.Agent})
	require.GreaterOrEqual(t, c.Elapsed(time.Now()), time.Minute)
}
