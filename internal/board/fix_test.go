package board

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// outside returns the lines of a board that are in no task table.
func outside(t *testing.T, src []byte) []line {
	t.Helper()
	b, _ := Parse(src, "x.md")
	var out []line
	next := 0
	for _, tb := range b.tables {
		out = append(out, b.lines[next:tb.header]...)
		next = tb.end
	}
	return append(out, b.lines[next:]...)
}

func TestFixRepairsEveryDamageWithoutLosingARow(t *testing.T) {
	t.Parallel()
	src := readFixture(t, "damaged.md")
	orig, _ := Parse(src, "damaged.md")
	out, changes, left := FixReport(src, "damaged.md")

	// What a person must decide is all that is left, at the fixed file's lines.
	require.Equal(t, []Problem{
		{17, "task T10 has no scope"},
		{18, "row has no ID"},
		{33, `type "new feature" must be 1 to 64 bytes with no white space`},
	}, left)
	fixed, problems := Parse(out, "damaged.md")
	require.Equal(t, left, problems)

	// Every row is kept, in order, under its ID or its reported new one.
	renamed := map[int]string{15: "T2-2", 17: "T-9", 34: "T1-2"}
	before, after := orig.Tasks(), fixed.Tasks()
	require.Len(t, after, len(before))
	for i, o := range before {
		want := o.ID
		if id, ok := renamed[o.Line]; ok {
			want = id
		}
		require.Equal(t, want, after[i].ID, "row of line %d", o.Line)
		if o.Status != Unknown {
			require.Equal(t, o.Status, after[i].Status, "row of line %d", o.Line)
		} else {
			require.Equal(t, Open, after[i].Status, "an unknown marker is never done")
		}
	}
	require.Equal(t, "Support a | b in scopes", after[3].Scope)
	require.Equal(t, "status was [~]", after[4].Cells[5])
	require.Equal(t, "extra cells: see #42", after[8].Cells[5])
	require.Equal(t, "status was done", after[13].Cells[5])

	// No text of a cell is lost (markers aside, which are canonical now).
	for _, r := range orig.rows {
		for k, c := range r.task.Cells {
			_, isRenamed := renamed[r.task.Line]
			if c != "" && k != r.t.idx.status && !(k == r.t.idx.id && isRenamed) {
				require.Contains(t, string(out), c, "line %d", r.task.Line)
			}
		}
	}

	// Prose and the fenced table are byte for byte what they were.
	require.Equal(t, outside(t, src), outside(t, out))
	require.Contains(t, string(out), "```md\n| ID | Scope | Status |\n|----|-------|--------|\n| X1 | inside a fence: not a task | [?] |\n```\n")

	// Each change is reported at the source line it changed.
	msgs := map[int][]string{}
	for _, c := range changes {
		msgs[c.Line] = append(msgs[c.Line], c.Msg)
	}
	require.Contains(t, msgs[7], "separator row rewritten for the header's 5 columns")
	require.Contains(t, msgs[9], `status "[X]" written as "[x]"`)
	require.Contains(t, msgs[10], `added the row's missing "|"`)
	require.Contains(t, msgs[12], `unknown status marker "[~]" set to "[ ]"; the marker is kept in the Notes column`)
	require.Contains(t, msgs[13], `empty status set to "[ ]"`)
	require.Contains(t, msgs[14], "row had 3 cells; padded with 2 empty cell(s) to the header's 5")
	require.Contains(t, msgs[15], `duplicate task ID "T2" (first on line 9) renamed to "T2-2"`)
	require.Contains(t, msgs[16], "removed a separator row inside the table")
	require.Contains(t, msgs[17], `task ID "T 9" renamed to "T-9" (no white space or control characters)`)
	require.Contains(t, msgs[18], "removed a repeated header row inside the table")
	require.Contains(t, msgs[34], `duplicate task ID "T1" (first on line 8) renamed to "T1-2"`)

	// Fixing a fixed board changes nothing.
	again, changes, left2 := FixReport(out, "damaged.md")
	require.Equal(t, string(out), string(again))
	require.Empty(t, changes)
	require.Equal(t, left, left2)
}

func TestFixWritesCanonicalAlignedTables(t *testing.T) {
	t.Parallel()
	src := "Intro\n\n  |id|scope|status|Verification|\n  |:-|:-:|-:|\n  |T1|Add a thing|[X]|it works|\n  |T2|Another|[ ]|\n"
	out, left := Fix([]byte(src), "c.md")
	require.Empty(t, left)
	require.Equal(t, "Intro\n\n"+
		"  | ID  | Scope       | Status | Verification |\n"+
		"  | :-- | :---------: | -----: | ------------ |\n"+
		"  | T1  | Add a thing | [x]    | it works     |\n"+
		"  | T2  | Another     | [ ]    |              |\n", string(out))
}

func TestFixInsertsAMissingSeparatorAndKeepsTheLastLineEnding(t *testing.T) {
	t.Parallel()
	out, left := Fix([]byte("| ID | Scope | Status |\n| T1 | a | [ ] |"), "c.md")
	require.Empty(t, left)
	require.Equal(t, "| ID  | Scope | Status |\n| --- | ----- | ------ |\n| T1  | a     | [ ]    |", string(out))

	out, _ = Fix([]byte("| ID | Scope | Status |"), "c.md")
	require.Equal(t, "| ID  | Scope | Status |\n| --- | ----- | ------ |", string(out))
}

func TestFixRenamesARepeatedKnownColumn(t *testing.T) {
	t.Parallel()
	src := "| ID | Scope | Status | status |\n|---|---|---|---|\n| T1 | a | [ ] | old |\n"
	_, problems := Parse([]byte(src), "c.md")
	require.Equal(t, []Problem{{1, `column 4 ("status") repeats column 3; only the first is read`}}, problems)
	out, changes, left := FixReport([]byte(src), "c.md")
	require.Empty(t, left)
	require.Equal(t, Problem{1, `column 4 repeats column 3 (Status); renamed "Status (4)"`}, changes[0])
	require.True(t, strings.HasPrefix(string(out), "| ID  | Scope | Status | Status (4) |\n"), string(out))
}

func TestFixLeavesABoardWithoutATableAlone(t *testing.T) {
	t.Parallel()
	src := []byte("# Notes\n\nNothing to do yet.\n")
	out, left := Fix(src, "n.md")
	require.Equal(t, string(src), string(out))
	require.Equal(t, []Problem{{0, "no task table: want a header row with ID, Scope and Status columns"}}, left)
}
