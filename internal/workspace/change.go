package workspace

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"unicode"
)

// maxMessageBytes bounds the agent's part of a commit message.
const maxMessageBytes = 8 << 10

// FileStat is one changed file: lines added and removed (zero for a
// binary), and its status: A added, M modified, D deleted, T type changed.
// Renames are not detected: a rename is a D and an A.
type FileStat struct {
	Path           string
	Added, Removed int
	Binary         bool
	Status         string
}

// Change is a recorded change from Base to Head: the files, the patch
// (`git diff --binary --full-index Base Head`, which `git apply` takes on
// Base), whether the last step changed nothing, and how many commits it made.
type Change struct {
	Base, Head string
	Files      []FileStat
	Patch      []byte
	Empty      bool
	Commits    int
	// Log is the authors and messages of the agent's own commits of this
	// attempt (Commit only), for the secret scan: they are pushed as written.
	Log string
}

// Trailers name what a commit records; they become the Drover-Workflow,
// Drover-Task, Drover-Attempt and Drover-Event trailers.
type Trailers struct {
	Workflow, Task string
	Attempt        int
	EventID        string
}

// Commit records whatever the agent changed: its own commits (kept as they
// are, when they descend from the task's head, made on the detached HEAD
// Open leaves or on another branch) and everything else in the worktree,
// added and committed with the trailers. Whenever there is something to
// record the head is Drover's commit with the trailers, on top of the
// agent's commits (an empty one when the agent committed everything
// itself); Drover alone moves the branch, and HEAD is left detached there.
// It returns the change from the base; Empty when nothing changed since the
// previous head. A removed worktree or a changed .git, a conflicted index,
// a HEAD moved off the task's history, a nested repository the base does
// not have, or an agent's commit message with a Drover- trailer line is
// ErrWorkspaceBroken, and so is a private object store that does not
// verify (objects the head needs are imported from it into the mirror
// before the branch moves); more than MaxPatchBytes added, a patch or the
// agent's objects over it, is ErrChangeTooLarge (nothing is committed).
func (w *Workspace) Commit(ctx context.Context, t Trailers, message string) (Change, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return Change{}, err
	}
	g := w.m.git
	objects, err := w.m.checkObjects(w.dir)
	if err != nil {
		return Change{}, err
	}
	cur, detached, err := w.attach(ctx)
	if err != nil {
		return Change{}, err
	}
	if err := w.addAll(ctx); err != nil {
		return Change{}, err
	}
	tree, err := g.out(ctx, w.dir, "write-tree")
	if err != nil {
		return Change{}, fmt.Errorf("workspace: write-tree: %w", err)
	}
	// What the agent's git wrote is in its private store: the objects its
	// commits and the tree need are imported, verified, before anything
	// below reads the mirror alone.
	if objects > 0 {
		if err := w.m.importObjects(ctx, w.dir, []string{cur, tree}, w.head); err != nil {
			return Change{}, err
		}
	}
	agentCommits, agentLog := 0, ""
	if cur != w.head {
		if agentCommits, agentLog, err = w.m.checkAgentCommits(ctx, w.head, cur); err != nil {
			return Change{}, err
		}
	}
	if err := w.m.checkTree(ctx, w.base, tree); err != nil {
		return Change{}, err
	}
	trees, err := g.out(ctx, "", "--git-dir", w.m.mirror, "rev-parse", cur+"^{tree}", w.head+"^{tree}")
	if err != nil {
		return Change{}, err
	}
	curTree, prevTree, _ := strings.Cut(trees, "\n")
	ch, err := w.m.change(ctx, w.base, tree)
	if err != nil {
		return Change{}, err
	}
	head := cur
	if tree != curTree || cur != w.head {
		head, err = g.out(ctx, "", "--git-dir", w.m.mirror, "commit-tree", tree, "-p", cur, "-m", commitMessage(message, t))
		if err != nil {
			return Change{}, fmt.Errorf("workspace: commit: %w", err)
		}
	}
	if err := w.setHead(ctx, head, cur, detached); err != nil {
		return Change{}, err
	}
	switch {
	case head == w.head:
	case cur == w.head:
		ch.Commits = 1 // Drover's own commit only
	default: // the agent's commits with Drover's on top
		ch.Commits, ch.Log = agentCommits+1, agentLog
	}
	ch.Head, ch.Empty = head, tree == prevTree
	w.head = head
	return ch, nil
}

// addAll stages everything the agent changed, found with one status pass
// (untracked cache on) and added by name, after refusing, before anything is
// written to the mirror, changed files that hold more than MaxPatchBytes
// and nested repositories (git would add one as a gitlink). The status pass
// never descends into a repository in the worktree.
func (w *Workspace) addAll(ctx context.Context) error {
	out, err := w.m.git.run(ctx, gitCall{dir: w.dir, args: []string{"status", "--porcelain=v1", "-z", "-uall", "--no-renames", "--ignore-submodules=all"}, limit: 16 << 20})
	if err != nil {
		return fmt.Errorf("workspace: status: %w", err)
	}
	root, err := os.OpenRoot(w.dir)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrWorkspaceBroken, err)
	}
	defer func() { _ = root.Close() }() // a directory handle: its files are closed on their own
	var paths bytes.Buffer
	var total int64
	for _, rec := range bytes.Split(out, []byte{0}) {
		if len(rec) < 4 {
			continue
		}
		if xy := string(rec[:2]); xy == "DD" || xy == "AA" || strings.Contains(xy, "U") {
			return fmt.Errorf("%w: the index has unmerged paths (a conflict the agent left unresolved)", ErrWorkspaceBroken)
		}
		p := rec[3:]
		if bytes.HasSuffix(p, []byte{'/'}) {
			// With -uall status names a directory only when it is a
			// repository of its own.
			return gitlinkError(string(p))
		}
		if fi, err := root.Lstat(string(p)); err == nil && fi.Mode().IsRegular() {
			total += fi.Size()
		}
		if total > int64(w.m.cfg.MaxPatchBytes) {
			return fmt.Errorf("%w: the changed files hold more than %d bytes (%.80q and others)", ErrChangeTooLarge, w.m.cfg.MaxPatchBytes, p)
		}
		paths.Write(p)
		paths.WriteByte(0)
	}
	if paths.Len() == 0 {
		return nil
	}
	_, err = w.m.git.run(ctx, gitCall{dir: w.dir, args: []string{"add", "-A", "--pathspec-from-file=-", "--pathspec-file-nul"},
		stdin: paths.Bytes(), env: []string{"GIT_LITERAL_PATHSPECS=1"}})
	if err != nil {
		return fmt.Errorf("workspace: add: %w", err)
	}
	return nil
}

// Diff returns the change from the base to the branch's head, committing
// nothing (uncommitted edits are not in it).
func (w *Workspace) Diff(ctx context.Context) (Change, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return Change{}, err
	}
	head, err := w.m.git.out(ctx, "", "--git-dir", w.m.mirror, "rev-parse", "-q", "--verify", "refs/heads/"+w.branch)
	if err != nil {
		return Change{}, fmt.Errorf("%w: the branch %s: %v", ErrWorkspaceBroken, w.branch, err)
	}
	ch, err := w.m.change(ctx, w.base, head)
	ch.Head = head
	return ch, err
}

// Apply replays a recorded patch (a cache hit, a resume): it builds Base's
// tree plus the patch, checks it is the recorded one (the tree of p.Head when
// this mirror has it, else the blob ids the patch names), commits it on top
// of the current head with the trailers, and checks it out (discarding
// uncommitted edits). Any failure is ErrPatchDoesNotApply and leaves the
// branch where it was. Empty when the tree equals the current head's.
func (w *Workspace) Apply(ctx context.Context, p Patch, t Trailers) (Change, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err := w.usable(); err != nil {
		return Change{}, err
	}
	if len(p.Patch) > w.m.cfg.MaxPatchBytes {
		return Change{}, fmt.Errorf("%w: %w: %d bytes", ErrPatchDoesNotApply, ErrChangeTooLarge, len(p.Patch))
	}
	g := w.m.git
	tree, err := w.m.applyTree(ctx, w.base, p)
	if err != nil {
		return Change{}, err
	}
	cur := w.head
	curTree, err := g.out(ctx, "", "--git-dir", w.m.mirror, "rev-parse", cur+"^{tree}")
	if err != nil {
		return Change{}, err
	}
	head := cur
	switch {
	case tree == curTree:
	case w.m.onBranch(ctx, w.branch, p.Head, cur, tree):
		// The recorded commit is already the branch's (a worker that
		// pushed it died before recording the task): take it as it is,
		// so the branch is not rewritten and its push is not refused.
		head = p.Head
	default:
		if t.Attempt == 0 {
			t.Attempt = p.Attempt
		}
		head, err = g.out(ctx, "", "--git-dir", w.m.mirror, "commit-tree", tree, "-p", cur, "-m", commitMessage(fmt.Sprintf("drover: recorded change of attempt %d", p.Attempt), t))
		if err != nil {
			return Change{}, fmt.Errorf("workspace: commit: %w", err)
		}
	}
	w.m.wtLock.RLock()
	_, err = g.out(ctx, w.dir, "checkout", "-q", "-f", "--no-recurse-submodules", "--detach", head)
	w.m.wtLock.RUnlock()
	if err != nil {
		return Change{}, fmt.Errorf("workspace: checkout: %w", err)
	}
	if err := w.setHead(ctx, head, head, true); err != nil {
		return Change{}, err
	}
	ch, err := w.m.change(ctx, w.base, head)
	if err != nil {
		return Change{}, err
	}
	ch.Head, ch.Empty = head, tree == curTree
	if tree != curTree {
		ch.Commits = 1
	}
	w.head = head
	return ch, nil
}

// onBranch reports whether head is the tip of the branch here or on the
// remote, with parent as its only parent and tree as its tree: the commit
// Apply would make, made before.
func (m *Manager) onBranch(ctx context.Context, branch, head, parent, tree string) bool {
	if !IsSHA(head) {
		return false
	}
	tips, err := m.git.out(ctx, "", "--git-dir", m.mirror, "for-each-ref", "--format=%(objectname)",
		"refs/heads/"+branch, "refs/remotes/origin/"+branch)
	if err != nil || !slices.Contains(strings.Fields(tips), head) {
		return false
	}
	got, err := m.git.out(ctx, "", "--git-dir", m.mirror, "rev-list", "--parents", "--max-count=1", head)
	if err != nil || got != head+" "+parent {
		return false
	}
	t, err := m.git.out(ctx, "", "--git-dir", m.mirror, "rev-parse", head+"^{tree}")
	return err == nil && t == tree
}

// applyTree writes base's tree plus the patch through a private index and
// checks the result is the recorded one.
func (m *Manager) applyTree(ctx context.Context, base string, p Patch) (string, error) {
	var rnd [8]byte
	_, _ = rand.Read(rnd[:])
	index := filepath.Join(m.tmp, "index-"+hex.EncodeToString(rnd[:]))
	defer func() { _ = os.Remove(index) }() // best effort: a temporary file
	env := []string{"GIT_INDEX_FILE=" + index}
	run := func(stdin []byte, args ...string) (string, error) {
		out, err := m.git.run(ctx, gitCall{args: append([]string{"--git-dir", m.mirror}, args...), env: env, stdin: stdin})
		return strings.TrimSpace(string(out)), err
	}
	if _, err := run(nil, "read-tree", base); err != nil {
		return "", fmt.Errorf("workspace: read-tree: %w", err)
	}
	if len(bytes.TrimSpace(p.Patch)) > 0 {
		if _, err := run(p.Patch, "apply", "--cached", "--binary", "--whitespace=nowarn", "-"); err != nil {
			return "", fmt.Errorf("%w: %v", ErrPatchDoesNotApply, err)
		}
	}
	tree, err := run(nil, "write-tree")
	if err != nil {
		return "", fmt.Errorf("workspace: write-tree: %w", err)
	}
	if IsSHA(p.Head) {
		if want, err := run(nil, "rev-parse", "-q", "--verify", p.Head+"^{tree}"); err == nil {
			if want != tree {
				return "", fmt.Errorf("%w: the result's tree %.12s is not the recorded head's %.12s", ErrPatchDoesNotApply, tree, want)
			}
			return tree, nil
		}
	}
	raw, err := m.git.run(ctx, gitCall{args: []string{"--git-dir", m.mirror, "diff-tree", "-r", "-z", "--no-renames", "--full-index", base, tree}})
	if err != nil {
		return "", fmt.Errorf("workspace: diff-tree: %w", err)
	}
	if got, want := rawBlobs(raw), patchBlobs(p.Patch); !equalSorted(got, want) {
		return "", fmt.Errorf("%w: the result's blobs are not the ones the patch names", ErrPatchDoesNotApply)
	}
	return tree, nil
}

// change computes the change from base to a commit or tree.
func (m *Manager) change(ctx context.Context, base, to string) (Change, error) {
	ch := Change{Base: base}
	args := func(extra ...string) gitCall {
		return gitCall{args: append([]string{"--git-dir", m.mirror, "diff", "--no-ext-diff", "--no-textconv", "--no-renames", "--no-color"}, append(extra, base, to, "--")...), limit: 16 << 20}
	}
	stats, err := m.git.run(ctx, args("--raw", "--numstat", "-z"))
	if err != nil {
		return ch, fmt.Errorf("workspace: diff: %w", err)
	}
	ch.Files = parseStats(stats)
	ch.Patch, err = m.git.run(ctx, gitCall{args: args("--binary", "--full-index").args, limit: m.cfg.MaxPatchBytes})
	if err == errOutputLimit {
		return Change{}, fmt.Errorf("%w: the patch is over %d bytes", ErrChangeTooLarge, m.cfg.MaxPatchBytes)
	}
	if err != nil {
		return Change{}, fmt.Errorf("workspace: diff: %w", err)
	}
	return ch, nil
}

// parseStats reads a `diff --raw --numstat -z` output: the raw records
// (":<modes> <ids> <status>\0<path>\0") then, in the same order, the numstat
// ones ("<added>\t<removed>\t<path>\0", "-" for a binary file).
func parseStats(out []byte) []FileStat {
	var files []FileStat
	recs := bytes.Split(bytes.TrimSuffix(out, []byte{0}), []byte{0})
	i := 0
	for ; i+1 < len(recs) && bytes.HasPrefix(recs[i], []byte{':'}); i += 2 {
		f := strings.Fields(string(recs[i]))
		if len(f) != 5 || f[4] == "" {
			break
		}
		files = append(files, FileStat{Status: f[4][:1], Path: string(recs[i+1])})
	}
	for j := 0; i < len(recs) && j < len(files); i, j = i+1, j+1 {
		f := strings.SplitN(string(recs[i]), "\t", 3)
		if len(f) < 3 {
			continue
		}
		if f[0] == "-" {
			files[j].Binary = true
			continue
		}
		files[j].Added, _ = strconv.Atoi(f[0])
		files[j].Removed, _ = strconv.Atoi(f[1])
	}
	return files
}

// rawBlobs returns the new blob ids of a `diff-tree -r -z` output, leaving
// out mode-only changes (a patch has no index line for them).
func rawBlobs(raw []byte) []string {
	var ids []string
	for _, rec := range bytes.Split(raw, []byte{0}) {
		if f := strings.Fields(string(rec)); len(f) == 5 && strings.HasPrefix(f[0], ":") && f[2] != f[3] {
			ids = append(ids, f[3])
		}
	}
	return ids
}

// patchBlobs returns the new blob ids of a patch's "index a..b" lines (the
// zero id for a deleted file).
func patchBlobs(patch []byte) []string {
	var ids []string
	for _, line := range strings.Split(string(patch), "\n") {
		if rest, ok := strings.CutPrefix(line, "index "); ok {
			if from, to, ok := strings.Cut(rest, ".."); ok {
				to, _, _ = strings.Cut(to, " ")
				if IsSHA(from) && IsSHA(to) {
					ids = append(ids, to)
				}
			}
		}
	}
	return ids
}

func equalSorted(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	sort.Strings(a)
	sort.Strings(b)
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// commitMessage is the agent's message made safe (bounded, no control
// characters, no Drover- trailers of its own) followed by the trailers.
func commitMessage(message string, t Trailers) string {
	if len(message) > maxMessageBytes {
		message = message[:maxMessageBytes]
	}
	message = strings.ToValidUTF8(message, "\uFFFD")
	message = strings.Map(func(r rune) rune {
		if r == '\n' || r == '\t' || !unicode.IsControl(r) {
			return r
		}
		return -1
	}, message)
	var lines []string
	for _, l := range strings.Split(message, "\n") {
		if !strings.HasPrefix(strings.ToLower(strings.TrimSpace(l)), "drover-") {
			lines = append(lines, strings.TrimRight(l, " \t"))
		}
	}
	message = strings.TrimSpace(strings.Join(lines, "\n"))
	if message == "" {
		message = fmt.Sprintf("drover: %s/%s attempt %d", t.Workflow, t.Task, t.Attempt)
	}
	var b strings.Builder
	b.WriteString(message)
	b.WriteString("\n\n")
	fmt.Fprintf(&b, "Drover-Workflow: %s\nDrover-Task: %s\nDrover-Attempt: %d\n", t.Workflow, t.Task, t.Attempt)
	if t.EventID != "" {
		fmt.Fprintf(&b, "Drover-Event: %s\n", t.EventID)
	}
	return b.String()
}
