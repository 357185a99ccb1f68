package cache

import (
	"fmt"

	"github.com/droverhq/drover/internal/runner"
)

// Scope is who shares cached role results.
type Scope string

// The scopes.
const (
	// ScopeFleet (the default): an identical request of any workflow gets
	// the cached result. A producer whose request matches another
	// workflow's gets that workflow's outputs (and, with workspaces, its
	// patch) without its own agent running: use it when every producer of
	// the fleet is trusted with every other's results.
	ScopeFleet Scope = "fleet"
	// ScopeWorkflow: the workflow ID is part of the key, so results are
	// shared only within a workflow.
	ScopeWorkflow Scope = "workflow"
)

// ParseScope reads a scope: "fleet" (or "", the default) or "workflow".
func ParseScope(s string) (Scope, error) {
	switch Scope(s) {
	case "", ScopeFleet:
		return ScopeFleet, nil
	case ScopeWorkflow:
		return ScopeWorkflow, nil
	}
	return "", fmt.Errorf("cache scope %q: want fleet or workflow", s)
}

// WithScope returns a Cache on c's bucket whose keys (Cache.Key) follow s.
func (c *Cache) WithScope(s Scope) *Cache {
	cp := *c
	cp.scope = s
	return &cp
}

// Key is the cache key of req under c's scope: Key, with the workflow ID
// added under ScopeWorkflow. A nil Cache keys as ScopeFleet.
func (c *Cache) Key(identity string, req runner.Request) string {
	if c == nil {
		return Key(identity, req)
	}
	return ScopedKey(c.scope, identity, req)
}

// ScopedKey is Key under scope s: under ScopeWorkflow the workflow ID is
// hashed in too; under ScopeFleet it is Key itself.
func ScopedKey(s Scope, identity string, req runner.Request) string {
	if s != ScopeWorkflow {
		return Key(identity, req)
	}
	return key(identity, req, req.Task.Workflow)
}
