package subjects

import (
	"encoding/json"
	"fmt"
	"slices"
)

// SimControls steer the built-in sim runner for one task, from the
// request's metadata.sim. Every field is optional.
type SimControls struct {
	// LatencyMS is a real, cancellable wait per role.
	LatencyMS map[Role]int `json:"latency_ms,omitempty"`
	// JudgeRejects rejects the first N implementer attempts, then approves.
	JudgeRejects int `json:"judge_rejects,omitempty"`
	// Fail makes a role's runner error on its first Times tries (-1: always).
	Fail *SimFail `json:"fail,omitempty"`
	// Panic names a role that panics.
	Panic Role `json:"panic,omitempty"`
	// Hang names a role that blocks until its timeout or cancellation.
	Hang Role `json:"hang,omitempty"`
}

// SimFail is the fail control of SimControls.
type SimFail struct {
	Role  Role `json:"role"`
	Times int  `json:"times"`
}

// SimControlsOf reads metadata.sim; absent controls are the zero value.
// Keys are case-sensitive and must be the contract's; roles must be
// planner, implementer or judge; latencies and judge_rejects must not be
// negative, and fail.times must be -1 or more. A typo is an error, never a
// control silently ignored (a fault drill that does not fault proves
// nothing).
func SimControlsOf(metadata map[string]json.RawMessage) (SimControls, error) {
	var c SimControls
	raw, ok := metadata["sim"]
	if !ok {
		return c, nil
	}
	top, err := checkKeys(raw, "metadata.sim", "latency_ms", "judge_rejects", "fail", "panic", "hang")
	if err != nil {
		return c, err
	}
	if f, ok := top["fail"]; ok {
		if _, err := checkKeys(f, "metadata.sim.fail", "role", "times"); err != nil {
			return c, err
		}
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("metadata.sim: %w", err)
	}
	for r, ms := range c.LatencyMS {
		if !r.Valid() {
			return c, fmt.Errorf("metadata.sim.latency_ms: %.40q is not a role", r)
		}
		if ms < 0 {
			return c, fmt.Errorf("metadata.sim.latency_ms.%s: %d is negative", r, ms)
		}
	}
	if c.JudgeRejects < 0 {
		return c, fmt.Errorf("metadata.sim.judge_rejects: %d is negative", c.JudgeRejects)
	}
	if c.Fail != nil {
		if !c.Fail.Role.Valid() {
			return c, fmt.Errorf("metadata.sim.fail.role: %.40q is not a role", c.Fail.Role)
		}
		if c.Fail.Times < -1 {
			return c, fmt.Errorf("metadata.sim.fail.times: %d is below -1", c.Fail.Times)
		}
	}
	if c.Panic != "" && !c.Panic.Valid() {
		return c, fmt.Errorf("metadata.sim.panic: %.40q is not a role", c.Panic)
	}
	if c.Hang != "" && !c.Hang.Valid() {
		return c, fmt.Errorf("metadata.sim.hang: %.40q is not a role", c.Hang)
	}
	return c, nil
}

// checkKeys rejects an object with a key outside known, and returns the
// object's fields; encoding/json alone would match keys case-insensitively
// and ignore unknown ones. A value that is not an object is left to
// json.Unmarshal to reject.
func checkKeys(raw json.RawMessage, what string, known ...string) (map[string]json.RawMessage, error) {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return nil, nil
	}
	for k := range m {
		if !slices.Contains(known, k) {
			return nil, fmt.Errorf("%s: unknown key %.40q", what, k)
		}
	}
	return m, nil
}
