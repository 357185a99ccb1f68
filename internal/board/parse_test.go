package board

import (
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

func readFixture(t *testing.T, name string) []byte {
	t.Helper()
	src, err := os.ReadFile("testdata/" + name)
	require.NoError(t, err)
	return src
}

func ids(tasks []Task) []string {
	var out []string
	for _, t := range tasks {
		out = append(out, t.ID)
	}
	return out
}

func TestParseReportsEveryDamageAtItsLine(t *testing.T) {
	t.Parallel()
	_, problems := Parse(readFixture(t, "damaged.md"), "damaged.md")
	want := []Problem{
		{6, `header row does not end with "|"`},
		{7, "separator row has 4 cells, the header has 5"},
		{10, `row does not start with "|"`},
		{11, "row has 6 cells, the header has 5"},
		{11, `unknown status marker "b in scopes" (want "[ ]" open or "[x]" done)`},
		{12, `unknown status marker "[~]" (want "[ ]" open or "[x]" done)`},
		{13, `status is empty (want "[ ]" open or "[x]" done)`},
		{14, "row has 3 cells, the header has 5"},
		{15, `duplicate task ID "T2" (first on line 9)`},
		{16, "separator row inside the table"},
		{17, "row has 6 cells, the header has 5"},
		{17, `task ID "T 9": invalid id: contains white space or a control character (U+0020)`},
		{18, "repeated header row inside the table"},
		{19, "task T10 has no scope"},
		{20, "row has no ID"},
		{20, `unknown status marker "[]" (want "[ ]" open or "[x]" done)`},
		{34, `duplicate task ID "T1" (first on line 8)`},
		{35, `type "new feature" must be 1 to 64 bytes with no white space`},
		{36, `unknown status marker "done" (want "[ ]" open or "[x]" done)`},
	}
	require.Equal(t, want, problems)
	require.Equal(t, "damaged.md:15: duplicate task ID \"T2\" (first on line 9)", problems[8].In("damaged.md"))
}

func TestParseReadsColumnsInAnyOrderAndCase(t *testing.T) {
	t.Parallel()
	src := "| status | TYPE | verification | id | Owner | scope | branch |\n" +
		"|---|---|---|---|---|---|---|\n" +
		"| [ ] | feature | GET /livez is 200 | T1 | ana | Add a health endpoint | feat/livez |\n" +
		"| [X] |  |  | T2 | bo | Escape a \\| pipe |  |\n"
	b, problems := Parse([]byte(src), "b.md")
	require.Empty(t, problems)
	require.Equal(t, []Task{
		{Line: 3, ID: "T1", Scope: "Add a health endpoint", Status: Open, Marker: "[ ]", Branch: "feat/livez",
			Verification: "GET /livez is 200", Type: "feature",
			Cells: []string{"[ ]", "feature", "GET /livez is 200", "T1", "ana", "Add a health endpoint", "feat/livez"}},
		{Line: 4, ID: "T2", Scope: "Escape a | pipe", Status: Done, Marker: "[X]",
			Cells: []string{"[X]", "", "", "T2", "bo", `Escape a \| pipe`, ""}},
	}, b.Tasks())
	tasks, open := b.Counts()
	require.Equal(t, 2, tasks)
	require.Equal(t, 1, open)
}

func TestRenderKeepsEveryByteOfProseAndRows(t *testing.T) {
	t.Parallel()
	src := readFixture(t, "prose.md")
	b, problems := Parse(src, "prose.md")
	require.Empty(t, problems)
	require.Equal(t, []string{"A1", "A2", "C1", "C2"}, ids(b.Tasks()))
	require.Equal(t, string(src), string(b.Render()))

	// SetStatus rewrites the marker and nothing else.
	changed, err := b.SetStatus("A2", true)
	require.NoError(t, err)
	require.True(t, changed)
	want := strings.Replace(string(src), "| A2   | Replay by subject filter      | [ ]", "| A2   | Replay by subject filter      | [x]", 1)
	require.NotEqual(t, want, string(src))
	require.Equal(t, want, string(b.Render()))
	changed, err = b.SetStatus("C2", true) // "[X]" is already done
	require.NoError(t, err)
	require.False(t, changed)
	changed, err = b.SetStatus("A2", false)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, string(src), string(b.Render()))
	_, err = b.SetStatus("nope", true)
	require.ErrorContains(t, err, `no task "nope"`)
}

func TestSetStatusFillsAnEmptyCell(t *testing.T) {
	t.Parallel()
	src := "| ID | Scope | Status |\n|---|---|---|\n| T1 | s ||\n"
	b, problems := Parse([]byte(src), "b.md")
	require.Len(t, problems, 1) // the empty status
	changed, err := b.SetStatus("T1", true)
	require.NoError(t, err)
	require.True(t, changed)
	require.Equal(t, "| ID | Scope | Status |\n|---|---|---|\n| T1 | s | [x] |\n", string(b.Render()))
}

func TestCRLFLineEndingsAreKept(t *testing.T) {
	t.Parallel()
	src := strings.ReplaceAll(string(readFixture(t, "prose.md")), "\n", "\r\n")
	b, problems := Parse([]byte(src), "crlf.md")
	require.Empty(t, problems)
	require.Equal(t, src, string(b.Render()))
	_, err := b.SetStatus("C1", true)
	require.NoError(t, err)
	out := string(b.Render())
	require.Equal(t, strings.Count(src, "\r\n"), strings.Count(out, "\r\n"))
	require.Equal(t, strings.Count(out, "\n"), strings.Count(out, "\r\n"), "no bare LF")

	fixed, left := Fix(readFixtureCRLF(t, "damaged.md"), "damaged.md")
	require.Len(t, left, 3)
	require.Equal(t, strings.Count(string(fixed), "\n"), strings.Count(string(fixed), "\r\n"), "no bare LF")
}

func readFixtureCRLF(t *testing.T, name string) []byte {
	t.Helper()
	return []byte(strings.ReplaceAll(string(readFixture(t, name)), "\n", "\r\n"))
}

func TestTablesInFencedCodeBlocksAreIgnored(t *testing.T) {
	t.Parallel()
	src := "# Example\n\n```markdown\n| ID | Scope | Status |\n|---|---|---|\n| X1 | not a task | [ ] |\n```\n\n" +
		"~~~~\n| ID | Scope | Status |\n~~~\n| X2 | still fenced: ~~~ is shorter than ~~~~ | [ ] |\n~~~~~\n\n" +
		"    | ID | Scope | Status |\n    |---|---|---|\n    | X3 | an indented code block | [ ] |\n"
	b, problems := Parse([]byte(src), "fenced.md")
	require.Empty(t, b.Tasks())
	require.Equal(t, []Problem{{0, "no task table: want a header row with ID, Scope and Status columns"}}, problems)
	require.Equal(t, "fenced.md: no task table: want a header row with ID, Scope and Status columns", problems[0].In("fenced.md"))

	b, problems = Parse([]byte(src+"\n| ID | Scope | Status |\n|---|---|---|\n| T1 | a task | [ ] |\n"), "fenced.md")
	require.Empty(t, problems)
	require.Equal(t, []string{"T1"}, ids(b.Tasks()))
}

func TestTwoTablesMakeOneBoard(t *testing.T) {
	t.Parallel()
	src := "## Backend\n\n| ID | Scope | Status |\n|---|---|---|\n| B1 | Add the API | [x] |\n| B2 | Add the store | [ ] |\n\n" +
		"Some prose between the tables.\n\n## Frontend\n\n| Scope | Status | ID | Type |\n|---|---|---|---|\n" +
		"| Add the page | [ ] | F1 | ui |\n| Reuse an ID | [ ] | B1 | ui |\n"
	b, problems := Parse([]byte(src), "two.md")
	require.Equal(t, []Problem{{15, `duplicate task ID "B1" (first on line 5)`}}, problems)
	require.Equal(t, []string{"B1", "B2", "F1", "B1"}, ids(b.Tasks()))
	require.Equal(t, src, string(b.Render()))

	fixed, left := Fix([]byte(src), "two.md")
	require.Empty(t, left)
	b, _ = Parse(fixed, "two.md")
	require.Equal(t, []string{"B1", "B2", "F1", "B1-2"}, ids(b.Tasks()))
	require.Equal(t, "ui", b.Tasks()[3].Type)
}

func TestQuotedAndProseLinesAreNotTables(t *testing.T) {
	t.Parallel()
	src := "> | ID | Scope | Status |\n> |---|---|---|\n\n| ID | Scope | Status |\n|---|---|---|\n| T1 | a | [ ] |\nprose right after the table\n"
	b, problems := Parse([]byte(src), "q.md")
	require.Empty(t, problems)
	require.Equal(t, []string{"T1"}, ids(b.Tasks()))
}
