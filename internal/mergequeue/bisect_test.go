package mergequeue

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/workspace"
)

// fakeTree is a scratch tree whose commits name the heads merged onto the
// base ("base+a+b"): a head conflicts when a head it conflicts with is
// already in, and the check fails when a bad head is in.
type fakeTree struct {
	state     []string
	conflicts map[string]string // head -> the head it conflicts with
	bad       map[string]bool   // heads the check refuses
}

func (f *fakeTree) Reset(_ context.Context, commit string) error {
	f.state = strings.Split(commit, "+")
	return nil
}

func (f *fakeTree) Merge(_ context.Context, head, _ string, _ bool) (string, error) {
	if with, ok := f.conflicts[head]; ok && slices.Contains(f.state, with) {
		return "", fmt.Errorf("%w: CONFLICT %s with %s", workspace.ErrConflict, head, with)
	}
	f.state = append(f.state, head)
	return strings.Join(f.state, "+"), nil
}

func (f *fakeTree) Run(context.Context, workspace.Command) error {
	for _, h := range f.state {
		if f.bad[h] {
			return errors.New("exit status 1: broken by " + h)
		}
	}
	return nil
}

func (f *fakeTree) Close(context.Context) {}

func TestFitFindsCulprits(t *testing.T) {
	t.Parallel()
	heads := func(s string) []Entry {
		var es []Entry
		for _, h := range strings.Fields(s) {
			es = append(es, Entry{Head: h, Branch: "b-" + h})
		}
		return es
	}
	cases := []struct {
		name      string
		in        string
		conflicts map[string]string
		bad       map[string]bool
		want      string // the resulting commit
		culprits  string
		maxSteps  int
	}{
		{name: "all clean", in: "a b c d", want: "base+a+b+c+d", maxSteps: 5},
		{name: "one conflict", in: "a b c d", conflicts: map[string]string{"c": "a"}, want: "base+a+b+d", culprits: "c:conflict"},
		{name: "a check failure", in: "a b c d e f g h", bad: map[string]bool{"f": true}, want: "base+a+b+c+d+e+g+h", culprits: "f:check"},
		{name: "three culprits of twelve", in: "a b c d e f g h i j k l",
			conflicts: map[string]string{"e": "b", "j": "i"}, bad: map[string]bool{"l": true},
			want: "base+a+b+c+d+f+g+h+i+k", culprits: "e:conflict j:conflict l:check"},
		{name: "conflict with a culprit is no conflict", in: "a b c", conflicts: map[string]string{"b": "a", "c": "b"}, bad: map[string]bool{"a": true},
			want: "base+b", culprits: "a:check c:conflict"},
		{name: "all bad", in: "a b", bad: map[string]bool{"a": true, "b": true}, want: "base", culprits: "a:check b:check"},
		{name: "empty", in: "", want: "base"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			check := workspace.Command{}
			if tc.bad != nil {
				check.Argv = []string{"check"}
			}
			b := &builder{tree: &fakeTree{conflicts: tc.conflicts, bad: tc.bad}, check: check}
			head, good, bad, err := b.fit(context.Background(), "base", heads(tc.in))
			require.NoError(t, err)
			require.Equal(t, tc.want, head)
			var got []string
			for _, c := range bad {
				got = append(got, c.entry.Head+":"+c.reason)
				require.NotEmpty(t, c.output)
			}
			require.Equal(t, tc.culprits, strings.Join(got, " "))
			require.Len(t, good, len(heads(tc.in))-len(bad))
			if tc.maxSteps > 0 {
				require.LessOrEqual(t, b.steps, tc.maxSteps)
			}
		})
	}
}
