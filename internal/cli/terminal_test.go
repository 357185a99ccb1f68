package cli

import (
	"bytes"
	"encoding/json"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/config"
	"github.com/droverhq/drover/internal/dlq"
	"github.com/droverhq/drover/subjects"
)

// hostile holds what a terminal must never get raw: an OSC title change,
// a screen clear, a C1 CSI and a bidi override.
const hostile = "x\x1b]0;owned\x07\x1b[2J\u009b31m\u202eevil"

func requireNoControls(t *testing.T, out string) {
	t.Helper()
	for _, c := range []string{"\x1b", "\x07", "\u009b", "\u202e"} {
		require.NotContains(t, out, c)
	}
}

func TestWriteEntryEscapesControls(t *testing.T) {
	t.Parallel()
	body, err := json.Marshal(map[string]string{"scope": hostile})
	require.NoError(t, err)
	var buf bytes.Buffer
	require.NoError(t, writeEntry(&buf, dlq.Entry{
		Seq: 1, Queue: "default", Header: nats.Header{"Drover-Error": {hostile}}, Body: body,
	}))
	requireNoControls(t, buf.String())
	require.Contains(t, buf.String(), `Drover-Error: x\x1b]0;owned\x07`)

	buf.Reset()
	require.NoError(t, writeEntry(&buf, dlq.Entry{Seq: 2, Body: []byte(hostile)}))
	requireNoControls(t, buf.String())
}

func TestWriteTaskStateEscapesControls(t *testing.T) {
	t.Parallel()
	res, err := json.Marshal(map[string]string{"change": hostile})
	require.NoError(t, err)
	st := subjects.TaskState{Workflow: "w", Task: "T", State: "failed", Feedback: hostile, Result: res}
	var buf bytes.Buffer
	require.NoError(t, writeTaskState(&buf, st, 1, st.UpdatedAt))
	requireNoControls(t, buf.String())
}

func TestRunnerDetailHidesURLCredentials(t *testing.T) {
	t.Parallel()
	d := runnerDetail(&config.Role{Runner: config.RunnerOpenAI, OpenAI: &config.OpenAI{BaseURL: "https://u:pw-detail-1@h/v1?api_key=pw-detail-2", Model: "m"}})
	require.NotContains(t, d, "pw-detail")
	require.Contains(t, d, "[REDACTED]@h/v1")
}
