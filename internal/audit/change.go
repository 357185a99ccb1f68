package audit

import (
	"encoding/json"
	"fmt"
	"strings"

	"github.com/droverhq/drover/subjects"
)

// MetaWorkspace is the metadata key of an implementer_change event that
// holds the attempt's recorded change (subjects.WorkspaceChange).
const MetaWorkspace = "workspace"

// maxChangeSummary bounds a change summary, in runes.
const maxChangeSummary = 160

// ChangeSummary sums up a recorded change in one line: how many files,
// lines added and removed, and the files ("no change" for an attempt that
// changed nothing), cut to maxChangeSummary runes. Paths are the agent's:
// the caller escapes them for a terminal.
func ChangeSummary(ch subjects.WorkspaceChange) string {
	if len(ch.Files) == 0 {
		return "no change"
	}
	added, removed, size := 0, 0, 0
	var parts []string
	for _, f := range ch.Files {
		added += f.Added
		removed += f.Removed
		if size > maxChangeSummary {
			continue // cut below anyway: only the totals still count
		}
		size += len(f.Path) + 12
		st := f.Status
		if st == "" {
			st = "M"
		}
		if f.Binary {
			parts = append(parts, fmt.Sprintf("%s %s (binary)", st, f.Path))
		} else {
			parts = append(parts, fmt.Sprintf("%s %s (+%d -%d)", st, f.Path, f.Added, f.Removed))
		}
	}
	files := "files"
	if len(ch.Files) == 1 {
		files = "file"
	}
	s := fmt.Sprintf("%d %s +%d -%d: %s", len(ch.Files), files, added, removed, strings.Join(parts, ", "))
	if ch.Empty {
		s = "no new change; " + s
	}
	if r := []rune(s); len(r) > maxChangeSummary {
		s = string(r[:maxChangeSummary-1]) + "…"
	}
	return s
}

// EventChange is the change summary of an implementer_change event with a
// recorded change, "" for any other event. A change stored whole in the
// blob store (a very long file list) says so.
func EventChange(e subjects.AuditEvent) string {
	if e.EventType != subjects.EventImplementerChange || len(e.Metadata) == 0 {
		return ""
	}
	var meta map[string]json.RawMessage
	if json.Unmarshal(e.Metadata, &meta) != nil {
		return ""
	}
	raw, ok := meta[MetaWorkspace]
	if !ok || len(raw) == 0 || string(raw) == "null" {
		return ""
	}
	var ch struct { // not the patch: it may be a blob reference
		Files []subjects.WorkspaceFile `json:"files"`
		Empty bool                     `json:"empty"`
		Blob  string                   `json:"blob"`
	}
	if json.Unmarshal(raw, &ch) != nil {
		return "change: unreadable record"
	}
	if ch.Blob != "" {
		return "change in the blob store (drover task diff)"
	}
	return ChangeSummary(subjects.WorkspaceChange{Files: ch.Files, Empty: ch.Empty})
}
