package replay

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/subjects"
)

// ChangeMatch compares one implementer attempt's workspace change in the
// record and in the re-run. The change's patch is from the task's base to
// the attempt's head, so the same base and the same patch digest mean the
// same tree (the worktree checked the tree when it applied the patch);
// the heads differ (other branch, other commit times).
type ChangeMatch struct {
	Attempt int    `json:"attempt"`
	OldHead string `json:"old_head"`
	NewHead string `json:"new_head,omitempty"`
	// Same: the re-run's attempt has the recorded tree.
	Same bool `json:"same_tree"`
}

// change is what the report reads of a recorded change (its other fields
// may be blob references).
type change struct {
	Base        string `json:"base"`
	Head        string `json:"head"`
	PatchSHA256 string `json:"patch_sha256"`
}

// changeIn decodes the workspace change in a role event's metadata.
func changeIn(o Output) (change, bool) {
	raw := recordedChange(o.Metadata)
	var c change
	if raw == nil || json.Unmarshal(raw, &c) != nil || c.PatchSHA256 == "" {
		return change{}, false
	}
	return c, true
}

// compareChanges compares the recorded workspace change of every
// implementer attempt of old with nt's. A task recorded without
// workspaces has none and matches.
func compareChanges(old, nt *Task) ([]ChangeMatch, bool) {
	var out []ChangeMatch
	ok := true
	for a := 1; ; a++ {
		st := Step{Role: subjects.RoleImplementer, Attempt: a}
		o, found := old.Outputs[st]
		if !found {
			break
		}
		oc, has := changeIn(o)
		if !has {
			continue
		}
		m := ChangeMatch{Attempt: a, OldHead: oc.Head}
		if nc, has := changeIn(nt.Outputs[st]); has {
			m.NewHead = nc.Head
			m.Same = nc.Base == oc.Base && nc.PatchSHA256 == oc.PatchSHA256
		}
		ok = ok && m.Same
		out = append(out, m)
	}
	return out, ok
}

// changesText is a task's workspace column: "-" without recorded
// changes, "same" when every attempt has the recorded tree, else the
// attempts that differ.
func changesText(t TaskReport) string {
	if len(t.Changes) == 0 {
		return "-"
	}
	if t.ChangesMatch {
		return "same"
	}
	s := "DIFFERENT"
	sep := " @"
	for _, c := range t.Changes {
		if !c.Same {
			s += fmt.Sprintf("%s%d", sep, c.Attempt)
			sep = ","
		}
	}
	return s
}

// resultOf is a task result as the report compares it: without its
// workspace part (the branch, the head and whether it was pushed are the
// re-run's own; its tree is compared per attempt in Changes).
func resultOf(raw json.RawMessage) json.RawMessage {
	var m map[string]json.RawMessage
	if !bytes.Contains(raw, []byte(`"workspace"`)) || json.Unmarshal(raw, &m) != nil {
		return raw
	}
	if _, ok := m[audit.MetaWorkspace]; !ok {
		return raw
	}
	delete(m, audit.MetaWorkspace)
	out, err := json.Marshal(m)
	if err != nil {
		return raw
	}
	return out
}
