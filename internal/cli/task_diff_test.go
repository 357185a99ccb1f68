package cli

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// recordedChange reads metadata.workspace; an event without one is a task
// that ran without a workspace.
func TestRecordedChange(t *testing.T) {
	ch := subjects.WorkspaceChange{Branch: "drover/w/T1", Base: "b", Head: "h",
		Files: []subjects.WorkspaceFile{{Path: "a.txt", Status: "A", Added: 1}}}
	ch.SetPatch([]byte("diff --git a/a.txt b/a.txt\n"))
	withChange, err := json.Marshal(map[string]any{"workspace": ch, "model": "m"})
	require.NoError(t, err)
	for _, tc := range []struct {
		name     string
		metadata string
		err      error
		errText  string
	}{
		{name: "no metadata", metadata: "", err: ErrNoWorkspace},
		{name: "empty metadata", metadata: "{}", err: ErrNoWorkspace},
		{name: "null workspace", metadata: `{"workspace": null}`, err: ErrNoWorkspace},
		{name: "not an object", metadata: `[1]`, errText: "event metadata"},
		{name: "garbage change", metadata: `{"workspace": "x"}`, errText: "recorded change"},
		{name: "change", metadata: string(withChange)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := recordedChange(context.Background(), nil, subjects.AuditEvent{Metadata: json.RawMessage(tc.metadata)})
			switch {
			case tc.err != nil:
				require.ErrorIs(t, err, tc.err)
			case tc.errText != "":
				require.ErrorContains(t, err, tc.errText)
			default:
				require.NoError(t, err)
				p, err := got.PatchData()
				require.NoError(t, err)
				require.Equal(t, "diff --git a/a.txt b/a.txt\n", string(p))
				require.Equal(t, "1 file +1 -0: A a.txt (+1 -0)", changeLine(got))
			}
		})
	}
}
