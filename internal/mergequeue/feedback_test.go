package mergequeue

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/workspace"
)

// The feedback a culprit's agent reads is bounded, masks secrets and
// escapes terminal control sequences.
func TestFeedbackIsBoundedAndRedacted(t *testing.T) {
	t.Parallel()
	m := &Merger{cfg: Config{Target: "main", MaxFeedback: 300, Check: workspace.Command{Argv: []string{"make", "test"}}},
		red: redact.New("hunter2")}
	e := Entry{Branch: "drover/wf/T1", Head: strings.Repeat("a", 40)}
	cases := []struct {
		name, reason, output, want string
	}{
		{name: "conflict", reason: "conflict", output: "CONFLICT (content): Merge conflict in lib.txt", want: "conflicts with the changes merged before it"},
		{name: "check", reason: "check", output: "exit status 2: FAIL", want: "fails the merge check (make)"},
		{name: "secret", reason: "check", output: "password=hunter2", want: "password=" + redact.Mask},
		{name: "escape", reason: "check", output: "\x1b[2Jcleared", want: `\x1b[2Jcleared`},
		{name: "long", reason: "check", output: strings.Repeat("x", 10000), want: "[cut]"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := m.feedback(culprit{entry: e, reason: tc.reason, output: tc.output}, strings.Repeat("b", 40))
			require.Contains(t, got, tc.want)
			require.Contains(t, got, "drover/wf/T1")
			require.Contains(t, got, "bbbbbbbbbbbb", "names the new target head")
			require.NotContains(t, got, "hunter2")
			require.NotContains(t, got, "\x1b")
			require.LessOrEqual(t, len(got), 300+len("\n[cut]"))
		})
	}
}
