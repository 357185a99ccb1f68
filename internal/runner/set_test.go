package runner

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestSetFor(t *testing.T) {
	t.Parallel()
	p, i, j := Func{ID: "p"}, Func{ID: "i"}, Func{ID: "j"}
	s := Set{Planner: p, Implementer: i, Judge: j}
	require.Equal(t, "p", s.For(subjects.RolePlanner).Identity())
	require.Equal(t, "i", s.For(subjects.RoleImplementer).Identity())
	require.Equal(t, "j", s.For(subjects.RoleJudge).Identity())
	require.Nil(t, s.For("reviewer"))
}

func TestSimSet(t *testing.T) {
	t.Parallel()
	sim := NewSim(SimOptions{})
	s := SimSet(sim)
	for _, r := range subjects.Roles {
		require.Same(t, sim, s.For(r))
	}
}
