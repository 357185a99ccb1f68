package subjects

import (
	"encoding/json"
	"fmt"
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
func SimControlsOf(metadata map[string]json.RawMessage) (SimControls, error) {
	var c SimControls
	raw, ok := metadata["sim"]
	if !ok {
		return c, nil
	}
	if err := json.Unmarshal(raw, &c); err != nil {
		return c, fmt.Errorf("metadata.sim: %w", err)
	}
	return c, nil
}
