package pipeline

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/sandbox"
)

// boxedWorkspace is a stub workspace whose adapter gives sandbox paths.
type boxedWorkspace struct{ stubWorkspace }

func (boxedWorkspace) SandboxPaths() sandbox.Paths {
	return sandbox.Paths{Work: "/wt", ReadOnly: []string{"/m.git"}, Home: "/homes/wt"}
}

// A role request carries the paths the workspace's adapter gives, and
// none when it gives none.
func TestSandboxPathsOfTheWorkspace(t *testing.T) {
	t.Parallel()
	require.Equal(t, sandbox.Paths{}, sandboxPaths(&stubWorkspace{}))
	require.Equal(t, sandbox.Paths{Work: "/wt", ReadOnly: []string{"/m.git"}, Home: "/homes/wt"}, sandboxPaths(&boxedWorkspace{}))
}
