package runner

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// SimDir is the directory of a workspace the sim implementer writes to.
const SimDir = "drover-sim"

// SimSharedFile is the file every sim implementer appends a line to, so
// that tasks of one base change one file in common, as real tasks do.
const SimSharedFile = "shared.txt"

// SimFile is the file, relative to the worktree, the sim implementer
// writes for a task: drover-sim/<task id made file-safe>-<8 hex of its
// sha256>.txt.
func SimFile(task string) string {
	safe := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '-' || r == '_' || r == '.' {
			return r
		}
		return '_'
	}, task)
	if len(safe) > 64 {
		safe = safe[:64]
	}
	sum := sha256.Sum256([]byte(task))
	return filepath.Join(SimDir, strings.TrimLeft(safe, ".")+"-"+hex.EncodeToString(sum[:4])+".txt")
}

// simEdit is the sim implementer's change in a workspace: deterministic in
// the request, so demos and tests without an agent produce real changes.
// It writes the task's own file (its scope and attempt) and appends one
// line to the shared file.
func simEdit(req Request) error {
	dir := req.Workspace.Dir
	own := filepath.Join(dir, SimFile(req.Task.ID))
	if err := os.MkdirAll(filepath.Dir(own), 0o755); err != nil {
		return fmt.Errorf("sim: workspace: %w", err)
	}
	body := fmt.Sprintf("task %s\nattempt %d\n\n%s\n", req.Task.ID, req.Attempt, req.Task.Scope)
	if err := os.WriteFile(own, []byte(body), 0o644); err != nil {
		return fmt.Errorf("sim: workspace: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dir, SimDir, SimSharedFile), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("sim: workspace: %w", err)
	}
	_, werr := fmt.Fprintf(f, "%s attempt %d\n", req.Task.ID, req.Attempt)
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return fmt.Errorf("sim: workspace: %w", werr)
	}
	return nil
}
