package runner

import "github.com/droverhq/drover/subjects"

// Set holds the runner of each role, so each role can use a different
// runner (a cheap model for the planner, a strong one for the judge).
type Set struct {
	Planner, Implementer, Judge Runner
}

// For returns the runner of role r, or nil for an unknown role or an unset
// field.
func (s Set) For(r subjects.Role) Runner {
	switch r {
	case subjects.RolePlanner:
		return s.Planner
	case subjects.RoleImplementer:
		return s.Implementer
	case subjects.RoleJudge:
		return s.Judge
	}
	return nil
}

// SimSet returns a Set that uses s for every role.
func SimSet(s *Sim) Set { return Set{Planner: s, Implementer: s, Judge: s} }
