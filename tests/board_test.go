package tests

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// writeBoard writes a board file into a fresh directory and returns its path.
func writeBoard(t *testing.T, name, src string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), name)
	require.NoError(t, os.WriteFile(file, []byte(src), 0o640))
	return file
}

func readBoard(t *testing.T, file string) string {
	t.Helper()
	got, err := os.ReadFile(file)
	require.NoError(t, err)
	return string(got)
}

// finishedLines reads the JSON lines --wait prints, by task.
func finishedLines(t *testing.T, out string) map[string]map[string]any {
	t.Helper()
	got := map[string]map[string]any{}
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		require.NoError(t, json.Unmarshal(sc.Bytes(), &m), sc.Text())
		got[m["task"].(string)] = m
	}
	return got
}

const sprintBoard = "# Sprint 7\n\nThe team's board. Prose   with odd  spacing stays.\n\n" +
	"| ID  | Scope                  | Status | Branch     | Verification       |\n" +
	"|-----|------------------------|--------|------------|--------------------|\n" +
	"| S1  | Add a health endpoint  | [ ]    | feat/livez | GET /livez is 200  |\n" +
	"| S2  | Done before Drover     | [x]    |            |                    |\n" +
	"| S3  | Bound the worker pool  | [ ]    | feat/pool  | never over the cap |\n\n" +
	"Closing notes, after the table.\n"

func TestBoardSubmitThenSyncMarksApprovedRows(t *testing.T) {
	t.Parallel()
	b := setup(t)
	simWorker(b, runner.NewSim(runner.SimOptions{}), 4)
	file := writeBoard(t, "sprint 7.md", sprintBoard)
	const wf = "sprint-7" // from the file name

	code, out, errOut := b.drover("board", "submit", file, "--wait")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "submitting 2 open task(s) of 3 as workflow sprint-7")
	done := finishedLines(t, out)
	require.Len(t, done, 2, out)
	for _, id := range []string{"S1", "S3"} {
		require.Equal(t, "completed", done[id]["outcome"], out)
		require.Equal(t, wf, done[id]["workflow"], out)
	}

	// Each request carried its row: scope, verification and metadata.board.
	for _, ev := range b.events(wf) {
		if ev.EventType != subjects.EventTaskAccepted || ev.TaskID != "S1" {
			continue
		}
		var req subjects.TaskRequest
		require.NoError(t, json.Unmarshal(ev.Input, &req))
		require.Equal(t, "Add a health endpoint", req.Scope)
		require.Equal(t, "GET /livez is 200", req.Verification)
		require.JSONEq(t, `{"file":"sprint 7.md","branch":"feat/livez"}`, string(req.Metadata["board"]))
		require.Equal(t, "7", string(req.Metadata["board_line"]))
	}

	code, out, errOut = b.drover("board", "sync", file)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, file+":7: S1 [ ] -> [x] (completed)")
	require.Contains(t, out, file+":9: S3 [ ] -> [x] (completed)")
	require.Contains(t, out, "2 row(s) updated from workflow sprint-7")
	want := strings.NewReplacer(
		"| S1  | Add a health endpoint  | [ ]", "| S1  | Add a health endpoint  | [x]",
		"| S3  | Bound the worker pool  | [ ]", "| S3  | Bound the worker pool  | [x]",
	).Replace(sprintBoard)
	require.Equal(t, want, readBoard(t, file), "only the two status cells changed")
	fi, err := os.Stat(file)
	require.NoError(t, err)
	require.Equal(t, os.FileMode(0o640), fi.Mode().Perm())

	code, out, errOut = b.drover("board", "sync", file)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, "in sync with workflow sprint-7")
	code, out, _ = b.drover("board", "validate", file)
	require.Equal(t, 0, code)
	require.Equal(t, file+": 3 tasks, 0 open, OK\n", out)
	code, _, errOut = b.drover("board", "submit", file)
	require.Equal(t, 0, code, errOut)
	require.Contains(t, errOut, "no open tasks (3 done), nothing submitted")
}

const releaseBoard = "## Release\n\n| ID | Scope | Status |\n|----|-------|--------|\n" +
	"| R1 | Ship the API | [ ] |\n" +
	"| R2 | Ship the UI | [ ] |\n" +
	"| R3 | Marked done, but its task failed | [x] |\n" +
	"| R4 | Done before Drover | [x] |\n"

func TestBoardSyncKeepsFailedRowsOpen(t *testing.T) {
	t.Parallel()
	b := setup(t)
	simWorker(b, runner.NewSim(runner.SimOptions{}), 4)
	file := writeBoard(t, "release.md", releaseBoard)
	const wf = "release"

	// R2 and R3 run first, under the board's workflow and IDs, and fail:
	// the judge rejects more often than max_attempts allows.
	var failing []subjects.TaskRequest
	for _, id := range []string{"R2", "R3"} {
		r := withSim(task(wf, id), `{"judge_rejects": 5}`)
		r.MaxAttempts = 1
		failing = append(failing, r)
	}
	ended := b.waitTerminal(wf, b.submit(failing...), 2)
	require.Equal(t, subjects.EventTaskFailed, ended["R2"].EventType)
	require.Equal(t, subjects.EventTaskFailed, ended["R3"].EventType)

	// The board's R2 is a duplicate of the failed request: --wait reports it.
	code, out, errOut := b.drover("board", "submit", file, "--wait")
	require.Equal(t, 1, code, errOut)
	done := finishedLines(t, out)
	require.Equal(t, "completed", done["R1"]["outcome"], out)
	require.Equal(t, "failed", done["R2"]["outcome"], out)
	require.NotContains(t, done, "R3", "a done row is not submitted")

	// --dry-run prints the changes and writes nothing.
	code, out, errOut = b.drover("board", "sync", file, "--dry-run", "--reopen-missing")
	require.Equal(t, 0, code, errOut)
	require.Contains(t, out, file+":8: R4 [x] -> [ ] (no state)")
	require.Contains(t, out, "3 row(s) would change (dry run, file not written)")
	require.Equal(t, releaseBoard, readBoard(t, file))

	code, out, errOut = b.drover("board", "sync", file)
	require.Equal(t, 0, code, errOut)
	require.Equal(t, file+":5: R1 [ ] -> [x] (completed)\n"+
		file+":7: R3 [x] -> [ ] (failed)\n"+
		file+": 2 row(s) updated from workflow release\n", out)
	want := strings.NewReplacer(
		"| R1 | Ship the API | [ ] |", "| R1 | Ship the API | [x] |",
		"| R3 | Marked done, but its task failed | [x] |", "| R3 | Marked done, but its task failed | [ ] |",
	).Replace(releaseBoard)
	require.Equal(t, want, readBoard(t, file), "R2 failed and stays open; R4 has no state and keeps its mark")
}

func TestBoardSubmitRefusesADamagedBoard(t *testing.T) {
	t.Parallel()
	b := setup(t)
	natstest.Provision(t, context.Background(), b.js, broker.Settings{Names: b.names})
	file := writeBoard(t, "damaged.md", "| ID | Scope | Status |\n|---|---|---|\n| D1 | fine | [ ] |\n| D1 | again | [?] |\n")

	code, _, errOut := b.drover("board", "submit", file, "--wait")
	require.Equal(t, 1, code)
	require.Contains(t, errOut, file+`:4: duplicate task ID "D1" (first on line 3)`)
	require.Contains(t, errOut, file+`:4: unknown status marker "[?]"`)
	require.Contains(t, errOut, "2 problem(s), nothing submitted")
	s, err := b.js.Stream(context.Background(), b.names.TasksStream())
	require.NoError(t, err)
	info, err := s.Info(context.Background())
	require.NoError(t, err)
	require.Zero(t, info.State.LastSeq, "nothing was published")

	code, out, _ := b.drover("board", "validate", file)
	require.Equal(t, 1, code)
	require.Contains(t, out, file+`:4: duplicate task ID "D1" (first on line 3)`)

	code, out, errOut = b.drover("board", "validate", "--fix", file)
	require.Equal(t, 0, code, out+errOut)
	require.Contains(t, out, file+`:4: fixed: duplicate task ID "D1" (first on line 3) renamed to "D1-2"`)
	require.Contains(t, out, file+": 2 tasks, 2 open, OK")
	require.Contains(t, readBoard(t, file), "| D1-2 | again | [ ]    | status was [?] |")
}
