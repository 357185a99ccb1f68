package board

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/droverhq/drover/subjects"
)

// Lookup tells a task's state in drover_state; found is false when the
// task has none (never submitted to the workflow, or not picked up yet).
type Lookup func(id string) (state string, found bool, err error)

// Change is a row whose status Sync changed.
type Change struct {
	Line     int
	ID       string
	From, To Status
	State    string // the task's state; "" when it has none
}

// SyncOptions tune Sync.
type SyncOptions struct {
	// ReopenMissing also sets "[ ]" on a done row whose task has no state.
	// By default such a row is kept: Drover knows nothing of it (it was done
	// before the board was submitted, or not submitted at all).
	ReopenMissing bool
}

// Sync writes each task's state into its status cell: completed is "[x]";
// running, paused, failed and cancelled are "[ ]" (nothing not completed
// is ever marked done, and a done row whose task is not completed is
// reopened); a task with no state keeps its row, see SyncOptions. It
// returns the changed rows; a lookup error stops it, with nothing changed.
func (b *Board) Sync(lookup Lookup, opts SyncOptions) ([]Change, error) {
	type plan struct {
		r     *row
		to    Status
		state string
	}
	var plans []plan
	for _, r := range b.rows {
		if subjects.ValidateID(r.task.ID) != nil {
			continue
		}
		state, found, err := lookup(r.task.ID)
		if err != nil {
			return nil, fmt.Errorf("%s:%d: task %s: %w", b.name, r.task.Line, r.task.ID, err)
		}
		to := Open
		switch {
		case found && state == subjects.StateCompleted:
			to = Done
		case !found && !opts.ReopenMissing && r.task.Status == Done:
			to = Done
		}
		if r.task.Status != to {
			plans = append(plans, plan{r, to, state})
		}
	}
	var out []Change
	for _, p := range plans {
		from := p.r.task.Status
		if err := b.setRow(p.r, p.to); err != nil {
			return out, err
		}
		out = append(out, Change{Line: p.r.task.Line, ID: p.r.task.ID, From: from, To: p.to, State: p.state})
	}
	return out, nil
}

// WriteFile replaces the file at path with data atomically and durably: a
// temporary file in the same directory, given the old file's permissions
// and synced, is renamed over it, and then the directory is synced, so the
// rename itself survives a crash. A symbolic link is followed, not
// replaced.
func WriteFile(path string, data []byte) error { return writeFile(path, data, osOps) }

// fileOps are the durability steps of writeFile, replaceable in tests.
type fileOps struct {
	syncFile func(*os.File) error
	rename   func(oldpath, newpath string) error
	syncDir  func(dir string) error
}

var osOps = fileOps{syncFile: (*os.File).Sync, rename: os.Rename, syncDir: syncDir}

// syncDir flushes a directory's entries (a rename into it) to disk.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	if err := d.Sync(); err != nil {
		_ = d.Close() // the write already failed: that error is returned
		return fmt.Errorf("sync directory %s: %w", dir, err)
	}
	return d.Close()
}

func writeFile(path string, data []byte, ops fileOps) (err error) {
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	mode := os.FileMode(0o644)
	if fi, err := os.Stat(path); err == nil {
		mode = fi.Mode().Perm()
	} else if !errors.Is(err, os.ErrNotExist) {
		return err
	}
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	renamed := false
	defer func() {
		if err != nil && !renamed {
			_ = tmp.Close()           // the write already failed: that error is returned
			_ = os.Remove(tmp.Name()) // best effort: a temporary file
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(mode); err != nil {
		return err
	}
	if err = ops.syncFile(tmp); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = ops.rename(tmp.Name(), path); err != nil {
		return err
	}
	renamed = true
	return ops.syncDir(dir)
}
