package pipeline

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// boundPatch keeps whole lines up to the limit, leaves binary hunks out,
// and says what it cut.
func TestBoundPatch(t *testing.T) {
	t.Parallel()
	text := "diff --git a/x b/x\n+one\n+two\n"
	bin := "diff --git a/b.bin b/b.bin\nGIT binary patch\nliteral 3\nKcmZ?\n\n"
	for _, tc := range []struct {
		name, patch string
		limit       int
		want, note  string
	}{
		{"fits", text, 1 << 10, text, ""},
		{"cut at a line", text, len("diff --git a/x b/x\n+one\n") + 2, "diff --git a/x b/x\n+one\n", "the patch is 29 bytes; only its first 24 bytes are shown"},
		{"binary left out", text + bin, 1 << 10, text + "diff --git a/b.bin b/b.bin\n(binary patch left out)\n", "1 binary patch(es) left out"},
		{"text after binary kept", bin + text, 1 << 10, "diff --git a/b.bin b/b.bin\n(binary patch left out)\n" + text, "1 binary patch(es) left out"},
		{"invalid UTF-8 made valid", "+\xff\n", 1 << 10, "+\uFFFD\n", ""},
		{"empty", "", 1 << 10, "", ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got, note := boundPatch([]byte(tc.patch), tc.limit)
			require.Equal(t, tc.want, got)
			require.Equal(t, tc.note, note)
			require.LessOrEqual(t, len(got), max(tc.limit, len(tc.want)))
		})
	}
}

// withAttempt records an attempt, replacing a record of it and of any
// later attempt (a round run again), clears pushed, keeps the delivered
// heads, and never changes its input.
func TestWithAttempt(t *testing.T) {
	t.Parallel()
	a := func(n int) subjects.WorkspaceAttempt {
		return subjects.WorkspaceAttempt{Attempt: n, Head: strings.Repeat(string(rune('a'+n)), 40)}
	}
	for _, tc := range []struct {
		name string
		have []subjects.WorkspaceAttempt
		rec  subjects.WorkspaceAttempt
		want []subjects.WorkspaceAttempt
	}{
		{"first", nil, a(1), []subjects.WorkspaceAttempt{a(1)}},
		{"next", []subjects.WorkspaceAttempt{a(1)}, a(2), []subjects.WorkspaceAttempt{a(1), a(2)}},
		{"again", []subjects.WorkspaceAttempt{a(1), a(2)}, a(2), []subjects.WorkspaceAttempt{a(1), a(2)}},
		{"earlier drops later", []subjects.WorkspaceAttempt{a(1), a(2), a(3)}, a(2), []subjects.WorkspaceAttempt{a(1), a(2)}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			delivered := []string{strings.Repeat("f", 40)}
			in := &subjects.TaskWorkspace{Branch: "b", Base: "base", Attempts: tc.have, Heads: delivered, Pushed: true}
			before := len(in.Attempts)
			out := withAttempt(in, tc.rec)
			require.Equal(t, tc.want, out.Attempts)
			require.Equal(t, "b", out.Branch)
			require.Equal(t, delivered, out.Heads, "the heads delivered before stay, as leases")
			require.False(t, out.Pushed, "the new attempt's head is not pushed")
			require.Len(t, in.Attempts, before, "the input is not changed")
			require.True(t, in.Pushed, "the input is not changed")
		})
	}
}

// The diff stat names each file with its lines, binaries as such, and the
// totals.
func TestDiffStat(t *testing.T) {
	t.Parallel()
	got := diffStat([]subjects.WorkspaceFile{
		{Path: "a.go", Status: "M", Added: 3, Removed: 1},
		{Path: "logo.png", Status: "A", Binary: true},
		{Path: "old.txt", Status: "D", Removed: 2},
	})
	require.Equal(t, "M a.go | +3 -1\nA logo.png | binary\nD old.txt | +0 -2\n3 files changed, 3 insertions(+), 3 deletions(-)", got)
}
