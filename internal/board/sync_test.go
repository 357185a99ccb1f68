package board

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/cache"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

func TestWorkflowIDComesFromTheFileName(t *testing.T) {
	t.Parallel()
	for name, want := range map[string]string{
		"boards/sprint-7.md":     "sprint-7",
		"/tmp/Sprint 12 (Q3).md": "Sprint-12-(Q3)",
		"board.v2.md":            "board.v2",
		"README":                 "README",
		"_.md":                   DefaultWorkflow,
		".md":                    DefaultWorkflow,
		"":                       DefaultWorkflow,
		strings.Repeat("é", 100): strings.Repeat("é", 64),
	} {
		require.Equal(t, want, WorkflowID(name), name)
		require.NoError(t, subjects.ValidateID(WorkflowID(name)))
	}
}

func TestRequestsAreTheOpenRows(t *testing.T) {
	t.Parallel()
	src := "| ID | Scope | Status | Branch | Verification | Type |\n|---|---|---|---|---|---|\n" +
		"| T1 | Done already | [x] | b1 | v1 | |\n" +
		"| T2 | Pipe \\| in scope | [ ] | feat/t2 | v2 | |\n" +
		"| T3 | Typed | [ ] | | | chore |\n"
	b, problems := Parse([]byte(src), "dir/sprint.md")
	require.Empty(t, problems)
	reqs := b.Requests("wf", "feature")
	require.Len(t, reqs, 2)
	require.Equal(t, "T2", reqs[0].ID)
	require.Equal(t, "wf", reqs[0].Workflow)
	require.Equal(t, "Pipe | in scope", reqs[0].Scope)
	require.Equal(t, "v2", reqs[0].Verification)
	require.Equal(t, "feature", reqs[0].Type)
	require.Equal(t, "feat/t2", reqs[0].Branch, "the Branch column fills the request's branch")
	require.Empty(t, reqs[1].Branch)
	require.JSONEq(t, `{"file":"sprint.md","branch":"feat/t2"}`, string(reqs[0].Metadata[MetaKey]))
	require.Equal(t, "4", string(reqs[0].Metadata[subjects.MetaBoardLine]))
	require.Equal(t, "chore", reqs[1].Type)
	require.JSONEq(t, `{"file":"sprint.md"}`, string(reqs[1].Metadata[MetaKey]))
	require.Equal(t, "5", string(reqs[1].Metadata[subjects.MetaBoardLine]))
	for _, r := range reqs {
		require.NoError(t, r.Validate())
		_, err := json.Marshal(r)
		require.NoError(t, err)
	}
}

// Inserting a row above a task moves its line, which its request still
// shows, but leaves its cache key as it was: its cached results stay valid.
func TestCacheKeyIgnoresTheRowsLine(t *testing.T) {
	t.Parallel()
	head := "| ID | Scope | Status | Branch |\n|---|---|---|---|\n"
	row := "| T2 | Write the thing | [ ] | feat/t2 |\n"
	key := func(src string) (string, string) {
		b, problems := Parse([]byte(src), "sprint.md")
		require.Empty(t, problems)
		reqs := b.Requests("wf", "feature")
		req := reqs[len(reqs)-1]
		require.Equal(t, "T2", req.ID)
		task := req.WithDefaults()
		return cache.Key("planner/v1", runner.Request{Role: subjects.RolePlanner, Task: task, Attempt: 1}), string(req.Metadata[subjects.MetaBoardLine])
	}
	before, line := key(head + row)
	require.Equal(t, "3", line)
	after, line := key(head + "| T1 | Inserted above | [ ] | |\n" + row)
	require.Equal(t, "4", line)
	require.Equal(t, before, after)

	moved, _ := key(head + "| T2 | Write the thing | [ ] | feat/other |\n")
	require.NotEqual(t, before, moved, "the rest of the board metadata is still part of the key")
}

const syncBoard = "# Board\n\nProse stays.\n\n| ID | Scope | Status |\n|----|-------|--------|\n" +
	"| C1 | completed, open on the board | [ ] |\n" +
	"| C2 | completed, done on the board | [x] |\n" +
	"| F1 | failed, done on the board | [X] |\n" +
	"| R1 | running, open on the board | [ ] |\n" +
	"| N1 | no state, done on the board | [x] |\n" +
	"| N2 | no state, open on the board | [ ] |\n\nMore prose.\n"

func fakeLookup(states map[string]string) Lookup {
	return func(id string) (string, bool, error) {
		s, ok := states[id]
		return s, ok, nil
	}
}

func TestSyncWritesTheTruthIntoTheStatusColumn(t *testing.T) {
	t.Parallel()
	b, problems := Parse([]byte(syncBoard), "s.md")
	require.Empty(t, problems)
	states := map[string]string{"C1": "completed", "C2": "completed", "F1": "failed", "R1": "running"}
	changes, err := b.Sync(fakeLookup(states), SyncOptions{})
	require.NoError(t, err)
	require.Equal(t, []Change{
		{Line: 7, ID: "C1", From: Open, To: Done, State: "completed"},
		{Line: 9, ID: "F1", From: Done, To: Open, State: "failed"},
	}, changes)
	want := strings.NewReplacer(
		"| C1 | completed, open on the board | [ ] |", "| C1 | completed, open on the board | [x] |",
		"| F1 | failed, done on the board | [X] |", "| F1 | failed, done on the board | [ ] |",
	).Replace(syncBoard)
	require.Equal(t, want, string(b.Render()))

	// Synced again, nothing changes.
	changes, err = b.Sync(fakeLookup(states), SyncOptions{})
	require.NoError(t, err)
	require.Empty(t, changes)

	// ReopenMissing also reopens a done row Drover knows nothing of.
	changes, err = b.Sync(fakeLookup(states), SyncOptions{ReopenMissing: true})
	require.NoError(t, err)
	require.Equal(t, []Change{{Line: 11, ID: "N1", From: Done, To: Open}}, changes)
}

func TestSyncStopsAtALookupErrorWithNothingChanged(t *testing.T) {
	t.Parallel()
	b, _ := Parse([]byte(syncBoard), "s.md")
	boom := errors.New("nats: timeout")
	_, err := b.Sync(func(id string) (string, bool, error) {
		if id == "R1" {
			return "", false, boom
		}
		return "completed", true, nil
	}, SyncOptions{})
	require.ErrorIs(t, err, boom)
	require.ErrorContains(t, err, "s.md:10: task R1")
	require.Equal(t, syncBoard, string(b.Render()))
}

func TestWriteFileIsAtomicAndKeepsTheMode(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "board.md")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o600))
	link := filepath.Join(dir, "link.md")
	require.NoError(t, os.Symlink(path, link))

	require.NoError(t, WriteFile(link, []byte("new")))
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "new", string(got))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o600), fi.Mode().Perm())
	li, err := os.Lstat(link)
	require.NoError(t, err)
	require.NotZero(t, li.Mode()&os.ModeSymlink, "the link is still a link")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	require.Len(t, entries, 2, "no temporary file left behind")
}

// The temporary file is synced before the rename and the directory after
// it, so a crash leaves the old board or the new one, never an empty or a
// lost file; a failed directory sync is reported.
func TestWriteFileSyncsTheFileThenTheDirectory(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := filepath.Join(dir, "board.md")
	var calls []string
	ops := fileOps{
		syncFile: func(f *os.File) error {
			calls = append(calls, "sync "+filepath.Dir(f.Name())+" temp")
			return f.Sync()
		},
		rename: func(from, to string) error {
			calls = append(calls, "rename to "+to)
			return os.Rename(from, to)
		},
		syncDir: func(d string) error {
			calls = append(calls, "sync dir "+d)
			return syncDir(d)
		},
	}
	require.NoError(t, writeFile(path, []byte("new"), ops))
	require.Equal(t, []string{"sync " + dir + " temp", "rename to " + path, "sync dir " + dir}, calls)

	boom := errors.New("EIO")
	ops.syncDir = func(string) error { return boom }
	require.ErrorIs(t, writeFile(path, []byte("newer"), ops), boom)
	got, err := os.ReadFile(path)
	require.NoError(t, err)
	require.Equal(t, "newer", string(got), "renamed; only its durability is in doubt")
}

// A Budget column gives each task its budget (metadata.budget_usd); a cell
// that is not a number of USD is a problem of its row.
func TestBudgetColumn(t *testing.T) {
	t.Parallel()
	src := "| ID | Scope | Status | Budget |\n|---|---|---|---|\n" +
		"| T1 | Cheap | [ ] | $0.50 |\n" +
		"| T2 | Free | [ ] | |\n"
	b, problems := Parse([]byte(src), "sprint.md")
	require.Empty(t, problems)
	reqs := b.Requests("wf", "")
	require.Len(t, reqs, 2)
	require.Equal(t, "0.5", string(reqs[0].Metadata["budget_usd"]))
	require.NotContains(t, reqs[1].Metadata, "budget_usd")

	_, problems = Parse([]byte("| ID | Scope | Status | budget |\n|---|---|---|---|\n| T1 | x | [ ] | lots |\n| T2 | y | [ ] | -1 |\n"), "b.md")
	require.Len(t, problems, 2)
	require.Contains(t, problems[0].Msg, `budget "lots" must be a number of USD`)
	require.Equal(t, 3, problems[0].Line)
}
