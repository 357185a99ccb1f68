package pipeline

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/subjects"
)

// branchRule is a Workspaces whose branch policy refuses one name; the
// real policy has its own tests in internal/workspace.
type branchRule struct {
	Workspaces
	refused string
}

func (b branchRule) CheckBranch(branch string) error {
	if branch == b.refused {
		return errors.New("protected branch: " + branch)
	}
	return nil
}

// TestAdmitRequest: a request may raise its queue's review mode, never
// lower it, and its branch passes the workspaces' policy; a refusal is
// invalid_value naming the field.
func TestAdmitRequest(t *testing.T) {
	t.Parallel()
	review := ReviewPolicy{Mode: subjects.ReviewAfterJudge, Queues: map[string]string{"human": subjects.ReviewInstead, "free": subjects.ReviewOff}}
	for _, tc := range []struct {
		name       string
		queue      string
		review     string
		branch     string
		workspaces bool
		want       string // "": admitted; else a part of the message
	}{
		{"nothing asked", "default", "", "", true, ""},
		{"the same level", "default", subjects.ReviewAfterJudge, "", true, ""},
		{"off below after_judge", "default", subjects.ReviewOff, "", true, `review "off" is below queue default's review mode "after_judge"`},
		{"instead below after_judge", "default", subjects.ReviewInstead, "", true, `review "instead" is below`},
		{"off below instead", "human", subjects.ReviewOff, "", true, `review "off" is below queue human's review mode "instead"`},
		{"after_judge raises instead", "human", subjects.ReviewAfterJudge, "", true, ""},
		{"instead raises off", "free", subjects.ReviewInstead, "", true, ""},
		{"off on an off queue", "free", subjects.ReviewOff, "", true, ""},
		{"an allowed branch", "default", "", "drover/x", true, ""},
		{"a refused branch", "default", "", "main", true, `branch: protected branch: main`},
		{"a branch without workspaces", "default", "", "main", false, ""},
	} {
		p := &Pipeline{cfg: Config{Review: review}}
		if tc.workspaces {
			p.d.Workspaces = branchRule{refused: "main"}
		}
		req := subjects.TaskRequest{Workflow: "wf", ID: "T1", Scope: "s", Review: tc.review, Branch: tc.branch}
		rej := p.admitRequest(consumers.Msg{Queue: tc.queue}, req)
		if tc.want == "" {
			require.Nil(t, rej, tc.name)
			continue
		}
		require.NotNil(t, rej, tc.name)
		require.Equal(t, subjects.ReasonInvalidValue, rej.Reason, tc.name)
		require.Equal(t, "wf", rej.Workflow, tc.name)
		require.Equal(t, "T1", rej.Task, tc.name)
		require.Contains(t, rej.Msg, tc.want, tc.name)
	}
}
