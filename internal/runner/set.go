package runner

import "github.com/droverhq/drover/subjects"

// Set holds the runner of each role, so each role can use a different
// runner (a cheap model for the planner, a strong one for the judge).
type Set struct {
	Planner, Implementer, Judge Runner
	// NoCache marks the roles whose results the pipeline neither takes
	// from the cache nor puts in it: side-effecting runners, such as an
	// exec agent that edits files, must run every time. The zero value
	// caches every role.
	NoCache RoleFlags
}

// RoleFlags is one flag per role.
type RoleFlags struct {
	Planner, Implementer, Judge bool
}

// For returns the flag of role r (false for an unknown role).
func (f RoleFlags) For(r subjects.Role) bool {
	switch r {
	case subjects.RolePlanner:
		return f.Planner
	case subjects.RoleImplementer:
		return f.Implementer
	case subjects.RoleJudge:
		return f.Judge
	}
	return false
}

// Set sets the flag of role r (an unknown role is ignored).
func (f *RoleFlags) Set(r subjects.Role, v bool) {
	switch r {
	case subjects.RolePlanner:
		f.Planner = v
	case subjects.RoleImplementer:
		f.Implementer = v
	case subjects.RoleJudge:
		f.Judge = v
	}
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

// Cached reports whether role r's results may be taken from and put in the
// cache.
func (s Set) Cached(r subjects.Role) bool { return !s.NoCache.For(r) }

// SimSet returns a Set that uses s for every role.
func SimSet(s *Sim) Set { return Set{Planner: s, Implementer: s, Judge: s} }
