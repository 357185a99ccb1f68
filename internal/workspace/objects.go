package workspace

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// The agent's git writes the objects it makes (its commits, the blobs it
// adds) to the worktree's private object store, <admin dir>/objects, and
// reads the mirror's store as a read-only alternate: no task can delete or
// corrupt an object that the mirror or another task needs. Drover's own
// git reads the private store as an alternate in the worktree and, before
// a head it records points at them, copies the objects that head needs
// into the mirror through a pack (verified: every object is stored under
// the hash of its content, and its links must resolve). The store is made
// empty when the worktree is added or reused and removed with it.

// maxObjectEntries bounds the files and directories of a private store
// walked before an import.
const maxObjectEntries = 200_000

// unpackLimit is the object count below which an import is written as
// loose objects, at or above which as one pack (receive.unpackLimit's
// default in git).
const unpackLimit = 100

// checkObjects returns how many files the worktree's private object store
// holds, after refusing one whose content Drover's git must not read: the
// store replaced by something else than a directory, a symbolic link or
// special file in it, or an alternates file naming further stores. A
// missing store holds nothing.
func (m *Manager) checkObjects(dir string) (int, error) {
	root := m.git.objectsDir(dir)
	fi, err := os.Lstat(root)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return 0, nil
	case err != nil:
		return 0, fmt.Errorf("%w: the private object store: %v", ErrWorkspaceBroken, err)
	case !fi.IsDir():
		return 0, fmt.Errorf("%w: the private object store (objects in the worktree's admin directory) was replaced by something else than a directory", ErrWorkspaceBroken)
	}
	files, entries := 0, 0
	err = filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if entries++; entries > maxObjectEntries {
			return fmt.Errorf("%w: the private object store holds more than %d entries", ErrChangeTooLarge, maxObjectEntries)
		}
		rel, _ := filepath.Rel(root, p)
		switch {
		case d.IsDir():
			return nil
		case !d.Type().IsRegular():
			return fmt.Errorf("%w: the private object store holds %.200q, which is not a regular file", ErrWorkspaceBroken, rel)
		case strings.HasPrefix(rel, "info"+string(filepath.Separator)) && strings.Contains(filepath.Base(rel), "alternates"):
			return fmt.Errorf("%w: the private object store names other stores (%.200q)", ErrWorkspaceBroken, rel)
		}
		files++
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrWorkspaceBroken) || errors.Is(err, ErrChangeTooLarge) {
			return 0, err
		}
		return 0, fmt.Errorf("%w: the private object store: %v", ErrWorkspaceBroken, err)
	}
	return files, nil
}

// importObjects copies into the mirror the objects of the worktree's
// private store reachable from tips (commits or trees) and not from have
// (a commit the mirror holds with all its history): a pack of them, at
// most MaxPatchBytes, written by pack-objects and taken in by
// unpack-objects or index-pack with --strict, which hash every object's
// content themselves (a forged object lands under its true name, never
// another's) and refuse a link that does not resolve. Afterwards every tip
// must be in the mirror. A private store that fails any of this
// is ErrWorkspaceBroken, naming what failed; a pack over the bound is
// ErrChangeTooLarge.
func (m *Manager) importObjects(ctx context.Context, dir string, tips []string, have string) error {
	want := strings.Join(tips, "\n") + "\n"
	// The private store is the primary one here and the mirror's the
	// alternate, so --local leaves out what the mirror holds already (an
	// upstream history the agent merged): the pack is the agent's objects.
	pack, err := m.git.run(ctx, gitCall{
		args: []string{"--git-dir", m.mirror, "pack-objects", "--revs", "--local", "--stdout", "-q", "--window=0"},
		env: []string{"GIT_OBJECT_DIRECTORY=" + m.git.objectsDir(dir),
			"GIT_ALTERNATE_OBJECT_DIRECTORIES=" + filepath.Join(m.mirror, "objects")},
		stdin: []byte(want + "^" + have + "\n"),
		limit: m.cfg.MaxPatchBytes,
	})
	if err == errOutputLimit {
		return fmt.Errorf("%w: the objects of the agent's commits are over %d bytes", ErrChangeTooLarge, m.cfg.MaxPatchBytes)
	}
	if err != nil {
		return fmt.Errorf("%w: the private object store does not hold what HEAD and the index need: %v", ErrWorkspaceBroken, err)
	}
	if len(pack) < 12 {
		return fmt.Errorf("%w: pack-objects wrote no pack", ErrWorkspaceBroken)
	}
	take := []string{"--git-dir", m.mirror, "unpack-objects", "-q", "--strict"}
	if binary.BigEndian.Uint32(pack[8:12]) >= unpackLimit {
		take = []string{"--git-dir", m.mirror, "index-pack", "--strict", "--stdin", "--fix-thin"}
	}
	if _, err := m.git.run(ctx, gitCall{args: take, stdin: pack}); err != nil {
		return fmt.Errorf("%w: the agent's objects do not verify (an object not stored under the hash of its content, or a broken link): %v", ErrWorkspaceBroken, err)
	}
	out, err := m.git.run(ctx, gitCall{args: []string{"--git-dir", m.mirror, "cat-file", "--batch-check=%(objectname)"}, stdin: []byte(want)})
	if err != nil {
		return fmt.Errorf("workspace: cat-file: %w", err)
	}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if strings.HasSuffix(line, " missing") {
			return fmt.Errorf("%w: the agent's object %.12s is stored under a name that is not the hash of its content", ErrWorkspaceBroken, line)
		}
	}
	return nil
}
