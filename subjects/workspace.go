package subjects

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"unicode/utf8"
)

// TaskWorkspace is a task's workspace as its state pins it: the branch,
// the base commit resolved when the task first needed its workspace, and
// the head each recorded implementer attempt left. It is written by the
// same compare-and-set as the stage change it goes with, so every attempt
// and every worker sees the same base.
type TaskWorkspace struct {
	Branch string `json:"branch"`
	Base   string `json:"base"`
	// Attempts holds the recorded implementer attempts, in order.
	Attempts []WorkspaceAttempt `json:"attempts,omitempty"`
	// Heads are the approved heads Drover delivers, oldest first, each
	// recorded before it is pushed: the last is the one being delivered;
	// a redelivery (its own commit of the same change) replaces any of
	// them on the remote, and nothing else.
	Heads []string `json:"heads,omitempty"`
	// Pushed is set once the approved head (the last of Heads) is on the
	// remote.
	Pushed bool `json:"pushed,omitempty"`
}

// Head is the approved head being delivered, "" before there is one.
func (w *TaskWorkspace) Head() string {
	if w == nil || len(w.Heads) == 0 {
		return ""
	}
	return w.Heads[len(w.Heads)-1]
}

// WorkspaceAttempt is one recorded implementer attempt.
type WorkspaceAttempt struct {
	Attempt int    `json:"attempt"`
	Head    string `json:"head"`
	// PatchSHA256 is the sha256 of the attempt's patch from the base.
	PatchSHA256 string `json:"patch_sha256"`
	Empty       bool   `json:"empty,omitempty"`
	// Session is the agent session the attempt left, which the next
	// attempt resumes (absent: the implementer reported none).
	Session *AgentSession `json:"session,omitempty"`
}

// AgentSession is an agent CLI's session: the preset that ran it, the
// CLI's session ID and, when it was kept, its state in the object store.
type AgentSession struct {
	Agent string `json:"agent"`
	ID    string `json:"id"`
	// State is the blob reference of the session's state in drover_blobs
	// ({"blob", "bytes", "truncated": true, "head": ""}); absent when it
	// was not kept.
	State json.RawMessage `json:"state,omitempty"`
	// CostUSD is the session's cost so far as the CLI reported it (which
	// counts a resumed session's earlier runs), when it reports one.
	CostUSD float64 `json:"cost_usd,omitempty"`
	// InputTokens (counting the cached), CacheReadTokens and OutputTokens
	// are the session's usage so far as the CLI reported it, for a CLI
	// whose resumed run reports the whole session's (Codex).
	InputTokens     int64 `json:"input_tokens,omitempty"`
	CacheReadTokens int64 `json:"cache_read_input_tokens,omitempty"`
	OutputTokens    int64 `json:"output_tokens,omitempty"`
}

// Last returns the last recorded attempt, if any.
func (w *TaskWorkspace) Last() (WorkspaceAttempt, bool) {
	if w == nil || len(w.Attempts) == 0 {
		return WorkspaceAttempt{}, false
	}
	return w.Attempts[len(w.Attempts)-1], true
}

// WorkspaceFile is one file of a recorded change.
type WorkspaceFile struct {
	Path    string `json:"path"`
	Status  string `json:"status"` // A, M, D or R
	Added   int    `json:"added"`
	Removed int    `json:"removed"`
	Binary  bool   `json:"binary,omitempty"`
}

// WorkspaceChange is an implementer attempt's change, recorded as
// metadata.workspace of its implementer_change event and in its cached
// result. The patch is from the base to the head (`git apply` takes it);
// it is in Patch when it is valid UTF-8, else base64 in PatchBase64. A
// patch over the blob limit is stored as a blob and referenced, like any
// large value. The patch is the agent's work: untrusted text.
type WorkspaceChange struct {
	Branch string          `json:"branch"`
	Base   string          `json:"base"`
	Head   string          `json:"head"`
	Files  []WorkspaceFile `json:"files"`
	// Commits is how many commits the attempt added (the agent's own and
	// Drover's).
	Commits int `json:"commits"`
	// Empty is set when the attempt changed nothing since the previous
	// head; the judge is told.
	Empty       bool   `json:"empty"`
	Patch       string `json:"patch,omitempty"`
	PatchBase64 string `json:"patch_base64,omitempty"`
	PatchBytes  int    `json:"patch_bytes"`
	PatchSHA256 string `json:"patch_sha256"`
}

// SetPatch stores p in the change, as text or base64, with its size and
// digest.
func (c *WorkspaceChange) SetPatch(p []byte) {
	c.Patch, c.PatchBase64 = "", ""
	if utf8.Valid(p) {
		c.Patch = string(p)
	} else {
		c.PatchBase64 = base64.StdEncoding.EncodeToString(p)
	}
	c.PatchBytes = len(p)
	c.PatchSHA256 = PatchDigest(p)
}

// PatchData returns the patch's bytes, checked against its digest.
func (c *WorkspaceChange) PatchData() ([]byte, error) {
	p := []byte(c.Patch)
	if c.PatchBase64 != "" {
		var err error
		if p, err = base64.StdEncoding.DecodeString(c.PatchBase64); err != nil {
			return nil, fmt.Errorf("workspace change: patch_base64: %w", err)
		}
	}
	if got := PatchDigest(p); got != c.PatchSHA256 {
		return nil, fmt.Errorf("workspace change: patch has sha256 %.12s, the record says %.12s", got, c.PatchSHA256)
	}
	return p, nil
}

// PatchDigest is the hex sha256 of a patch.
func PatchDigest(p []byte) string {
	sum := sha256.Sum256(p)
	return hex.EncodeToString(sum[:])
}

// WorkspaceResult is result.workspace of a completed task with a
// workspace: its branch, base and approved head, and whether the branch
// was pushed.
type WorkspaceResult struct {
	Branch string `json:"branch"`
	Base   string `json:"base"`
	Head   string `json:"head"`
	Pushed bool   `json:"pushed"`
}
