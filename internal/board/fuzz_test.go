package board

import (
	"os"
	"testing"
)

// FuzzBoard checks the promises that hold for any input: Parse then Render
// returns the source; Fix keeps every task row, leaves exactly the problems
// Parse finds in its output, and is idempotent.
func FuzzBoard(f *testing.F) {
	for _, name := range []string{"damaged.md", "prose.md"} {
		src, err := os.ReadFile("testdata/" + name)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte("\uFEFF| ID | Scope | Status |\r\n| T1 | a \\| b | [ ] | x |"))
	f.Add([]byte("| id | scope | status |\n|-|-|\n|---|\n| \\| | \x00 | [X]\n\n```\n| ID | Scope | Status |\n"))
	f.Fuzz(func(t *testing.T, src []byte) {
		b, _ := Parse(src, "f.md")
		if got := b.Render(); string(got) != string(src) {
			t.Fatalf("Render changed the source:\n%q\n%q", src, got)
		}
		out, _, left := FixReport(src, "f.md")
		fixed, problems := Parse(out, "f.md")
		if len(fixed.rows) != len(b.rows) {
			t.Fatalf("Fix kept %d of %d rows:\n%q\n%q", len(fixed.rows), len(b.rows), src, out)
		}
		if len(problems) != len(left) {
			t.Fatalf("Fix left %v, its output has %v", left, problems)
		}
		again, changes, _ := FixReport(out, "f.md")
		if string(again) != string(out) || len(changes) != 0 {
			t.Fatalf("Fix is not idempotent: %v\n%q\n%q", changes, out, again)
		}
	})
}
