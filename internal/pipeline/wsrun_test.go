package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// stubWorkspace records which of Commit and Apply ran.
type stubWorkspace struct {
	base    string
	applied []WorkspacePatch
	commits int
	err     error // Apply's
}

func (s *stubWorkspace) Dir() string                          { return "/wt" }
func (s *stubWorkspace) Branch() string                       { return "drover/w2/a" }
func (s *stubWorkspace) Base() string                         { return s.base }
func (s *stubWorkspace) Head(context.Context) (string, error) { return "h", nil }
func (s *stubWorkspace) Release(context.Context, bool) error  { return nil }
func (s *stubWorkspace) Commit(context.Context, CommitTrailers, string) (WorkspaceDiff, error) {
	s.commits++
	return WorkspaceDiff{Base: s.base, Head: "committed", Patch: []byte("agent's\n")}, nil
}
func (s *stubWorkspace) Apply(_ context.Context, p WorkspacePatch, _ CommitTrailers) (WorkspaceDiff, error) {
	if s.err != nil {
		return WorkspaceDiff{}, s.err
	}
	s.applied = append(s.applied, p)
	return WorkspaceDiff{Base: s.base, Head: "applied", Patch: p.Patch}, nil
}

// keepWork applies a result's RecordedChange (from the task's base,
// sha256-checked) instead of committing; a change that cannot be applied
// is permanent; a result without one, or with a workspace value an agent
// could have written, has the worktree committed.
func TestKeepWork(t *testing.T) {
	t.Parallel()
	rec := subjects.WorkspaceChange{Branch: "drover/w/a", Base: "B1", Head: "old"}
	rec.SetPatch([]byte("diff --git a/x b/x\n+recorded\n"))
	good, _ := json.Marshal(rec)
	bad := rec
	bad.PatchSHA256 = subjects.PatchDigest([]byte("other"))
	badSum, _ := json.Marshal(bad)
	for _, tc := range []struct {
		name      string
		meta      map[string]any
		base      string
		applyErr  error
		applied   bool
		committed bool
		permanent bool
	}{
		{"recorded change applied", map[string]any{metaWorkspace: RecordedChange(good)}, "B1", nil, true, false, false},
		{"another base", map[string]any{metaWorkspace: RecordedChange(good)}, "B2", nil, false, false, true},
		{"a digest that does not match", map[string]any{metaWorkspace: RecordedChange(badSum)}, "B1", nil, false, false, true},
		{"does not apply", map[string]any{metaWorkspace: RecordedChange(good)}, "B1", ErrPatchDoesNotApply, false, false, true},
		{"no recorded change", nil, "B1", nil, false, true, false},
		{"an agent's workspace value", map[string]any{metaWorkspace: map[string]any{"patch": "x"}}, "B1", nil, false, true, false},
		{"an agent's raw JSON", map[string]any{metaWorkspace: json.RawMessage(good)}, "B1", nil, false, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ws := &stubWorkspace{base: tc.base, err: tc.applyErr}
			tr := &taskRun{req: subjects.TaskRequest{Workflow: "w2", ID: "a"}, ws: ws}
			res := runner.Result{Output: json.RawMessage(`{}`), Metadata: tc.meta}
			err := (&Pipeline{}).keepWork(context.Background(), tr, 1, &res)
			require.Equal(t, tc.permanent, errors.Is(err, runner.ErrPermanent), "%v", err)
			if tc.permanent {
				return
			}
			require.NoError(t, err)
			require.Equal(t, tc.applied, len(ws.applied) == 1)
			require.Equal(t, tc.committed, ws.commits == 1)
			if tc.applied {
				require.Equal(t, rec.PatchSHA256, tr.change.PatchSHA256)
				require.Equal(t, "applied", tr.change.Head)
				require.IsType(t, json.RawMessage(nil), res.Metadata[metaWorkspace], "the event records the re-run's own change")
			}
		})
	}
}
