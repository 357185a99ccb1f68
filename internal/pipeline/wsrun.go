package pipeline

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/droverhq/drover/consumers"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/subjects"
)

// metaWorkspace is the key of the recorded change in an implementer
// result's metadata (and so in its event's metadata and its cache entry).
const metaWorkspace = "workspace"

// judgePatchBytes bounds the patch a judge's request carries.
const judgePatchBytes = 64 << 10

// pinned is the task's workspace as pinned: in its state, or resolved by
// this delivery and written by its next commit.
func (t *taskRun) pinned() *subjects.TaskWorkspace {
	if t.st.Workspace != nil {
		return t.st.Workspace
	}
	return t.wsPin
}

// openWorkspace gives the round its worktree, once per delivery. The first
// time the task needs one, the base is resolved and pinned: the next
// commit of the task's state carries it, so every attempt and every worker
// sees the same base. A worktree opened on another worker (or again after
// a pause) gets the last recorded attempt's patch replayed, so no recorded
// work is lost and no role runs again for it.
func (p *Pipeline) openWorkspace(ctx context.Context, t *taskRun) error {
	if p.d.Workspaces == nil || t.ws != nil {
		return nil
	}
	if t.pinned() == nil {
		branch, err := p.d.Workspaces.Branch(t.req.Workflow, t.req.ID, t.req.Branch)
		if err != nil {
			return fmt.Errorf("workspace: branch: %w", err)
		}
		base, err := p.d.Workspaces.ResolveBase(ctx)
		if err != nil {
			return fmt.Errorf("workspace: base: %w", err)
		}
		t.wsPin = &subjects.TaskWorkspace{Branch: branch, Base: base}
	}
	pin := t.pinned()
	spec := WorkspaceSpec{Workflow: t.req.Workflow, Task: t.req.ID, Branch: pin.Branch, Base: pin.Base}
	t.change = nil
	if last, ok := pin.Last(); ok {
		ch, err := p.recordedChange(ctx, t, last)
		if err != nil {
			return err
		}
		patch, err := ch.PatchData()
		if err != nil {
			return fmt.Errorf("workspace: attempt %d: %w", last.Attempt, err)
		}
		spec.Replay = &WorkspacePatch{Attempt: last.Attempt, Head: last.Head, Patch: patch}
		t.change = ch
	}
	ws, err := p.d.Workspaces.Open(ctx, spec)
	if err != nil {
		return fmt.Errorf("workspace: open %s: %w", pin.Branch, err)
	}
	t.ws = ws
	return nil
}

// recordedChange reads a recorded attempt's change: from the cache entry
// of the task's last implementer result, else (a miss, or an entry that
// does not hold that change) from its implementer_change event, which
// never expires. The change is checked against the state's record, and
// carries the task's own branch and head: a cache entry may be another
// task's run of the same work.
func (p *Pipeline) recordedChange(ctx context.Context, t *taskRun, last subjects.WorkspaceAttempt) (*subjects.WorkspaceChange, error) {
	check := func(raw json.RawMessage) (*subjects.WorkspaceChange, error) {
		ch, err := p.decodeChange(ctx, raw)
		if err != nil {
			return nil, err
		}
		if ch.PatchSHA256 != last.PatchSHA256 {
			return nil, fmt.Errorf("patch %.12s, the state records %.12s", ch.PatchSHA256, last.PatchSHA256)
		}
		ch.Branch, ch.Head, ch.Empty = t.pinned().Branch, last.Head, last.Empty
		return ch, nil
	}
	if key := t.st.Outputs[subjects.RoleImplementer]; key != "" {
		if res, ok := p.d.Cache.Get(ctx, key); ok {
			if ch, err := check(changeOf(res.Metadata)); err == nil {
				return ch, nil
			}
		}
	}
	subj := p.d.Names.AuditSubject(t.req.Workflow, t.req.ID, subjects.ActorOf(subjects.RoleImplementer), subjects.EventImplementerChange)
	m, err := p.d.Audit.GetLastMsgForSubject(ctx, subj)
	if err != nil {
		return nil, fmt.Errorf("workspace: change of attempt %d: not in the cache and not in the audit stream: %w", last.Attempt, err)
	}
	var ev struct {
		Attempt  int `json:"attempt"`
		Metadata struct {
			Workspace json.RawMessage `json:"workspace"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(m.Data, &ev); err != nil {
		return nil, fmt.Errorf("workspace: audit event %d: %w", m.Sequence, err)
	}
	if ev.Attempt != last.Attempt {
		return nil, fmt.Errorf("workspace: the last implementer_change is of attempt %d, the state records attempt %d", ev.Attempt, last.Attempt)
	}
	ch, err := check(ev.Metadata.Workspace)
	if err != nil {
		return nil, fmt.Errorf("workspace: change of attempt %d: %w", last.Attempt, err)
	}
	return ch, nil
}

// changeOf returns the recorded change in a result's metadata (decoded
// from JSON, or as the pipeline put it), nil when there is none.
func changeOf(meta map[string]any) json.RawMessage {
	v, ok := meta[metaWorkspace]
	if !ok || v == nil {
		return nil
	}
	if raw, ok := v.(json.RawMessage); ok {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return nil
	}
	return b
}

// decodeChange expands a stored change's blob references and decodes it.
func (p *Pipeline) decodeChange(ctx context.Context, raw json.RawMessage) (*subjects.WorkspaceChange, error) {
	if len(raw) == 0 {
		return nil, errors.New("no recorded change")
	}
	full, err := p.expand(ctx, raw)
	if err != nil {
		return nil, err
	}
	var ch subjects.WorkspaceChange
	if err := json.Unmarshal(full, &ch); err != nil {
		return nil, err
	}
	if _, err := ch.PatchData(); err != nil {
		return nil, err
	}
	return &ch, nil
}

// trailers are the commit trailers of an implementer attempt: its
// implementer_change event's ID names the record.
func (t *taskRun) trailers(attempt int) CommitTrailers {
	return CommitTrailers{Workflow: t.req.Workflow, Task: t.req.ID, Attempt: attempt,
		EventID: subjects.EventID(t.req.Workflow, t.req.ID, attempt, subjects.ActorOf(subjects.RoleImplementer), subjects.EventImplementerChange, 0)}
}

// recordChange keeps a committed change as the attempt's record: in the
// result's metadata (so in its event and its cache entry), with the patch
// stored as a blob when large. A change holding a configured secret is
// refused first (scanChange): nothing of it is recorded.
func (p *Pipeline) recordChange(ctx context.Context, t *taskRun, res *runner.Result, d WorkspaceDiff) error {
	if err := p.scanChange(d); err != nil {
		return err
	}
	ch := subjects.WorkspaceChange{Branch: t.ws.Branch(), Base: d.Base, Head: d.Head, Files: d.Files, Commits: d.Commits, Empty: d.Empty}
	if ch.Files == nil {
		ch.Files = []subjects.WorkspaceFile{}
	}
	ch.SetPatch(d.Patch)
	stored, err := p.shrink(ctx, mustJSON(ch))
	if err != nil {
		return err
	}
	meta := make(map[string]any, len(res.Metadata)+1)
	for k, v := range res.Metadata {
		meta[k] = v
	}
	meta[metaWorkspace] = stored
	res.Metadata = meta
	t.change = &ch
	return nil
}

// RecordedChange is a recorded implementer attempt's change as a runner
// serves it: the JSON of its implementer_change event's
// metadata.workspace (a subjects.WorkspaceChange, or a blob reference to
// one). A result whose metadata holds one under "workspace" gets it
// applied in the task's worktree instead of having what the role did
// committed, exactly like a cache hit: that is how a replay gives its
// branch the recorded tree. Only a Go runner can set it (a value decoded
// from an agent's JSON never has this type), so no agent can.
type RecordedChange json.RawMessage

// keepWork records an implementer attempt's change in the worktree: the
// result's RecordedChange applied (checked to be from the task's base and
// to give the recorded tree; anything else is permanent: the re-run left
// the record), else what the role changed, committed.
func (p *Pipeline) keepWork(ctx context.Context, t *taskRun, attempt int, res *runner.Result) error {
	if rc, ok := res.Metadata[metaWorkspace].(RecordedChange); ok {
		ch, err := p.decodeChange(ctx, json.RawMessage(rc))
		if err == nil && ch.Base != t.ws.Base() {
			err = fmt.Errorf("recorded on base %.12s, the worktree's is %.12s", ch.Base, t.ws.Base())
		}
		if err == nil {
			err = p.applyChange(ctx, t, attempt, res, ch)
		}
		if err != nil {
			return runner.Permanentf("the recorded change of attempt %d: %w", attempt, err)
		}
		return nil
	}
	d, err := t.ws.Commit(ctx, t.trailers(attempt), commitMessage(t, attempt, res.Reasoning))
	if err != nil {
		return err
	}
	return p.recordChange(ctx, t, res, d)
}

// applyCached replays a cached implementer result's change in the task's
// worktree. A change that no longer applies wraps ErrPatchDoesNotApply:
// the caller runs the role instead.
func (p *Pipeline) applyCached(ctx context.Context, t *taskRun, attempt int, res *runner.Result) error {
	ch, err := p.decodeChange(ctx, changeOf(res.Metadata))
	if err != nil {
		return fmt.Errorf("%w: cached change: %v", ErrPatchDoesNotApply, err)
	}
	return p.applyChange(ctx, t, attempt, res, ch)
}

// applyChange applies a recorded change (decoded and checked) in the
// task's worktree and records the result in res.
func (p *Pipeline) applyChange(ctx context.Context, t *taskRun, attempt int, res *runner.Result, ch *subjects.WorkspaceChange) error {
	patch, _ := ch.PatchData() // checked by decodeChange
	d, err := t.ws.Apply(ctx, WorkspacePatch{Attempt: attempt, Head: ch.Head, Patch: patch}, t.trailers(attempt))
	if err != nil {
		return err
	}
	return p.recordChange(ctx, t, res, d)
}

// attemptRecord is the state's record of the change t.change.
func (t *taskRun) attemptRecord(attempt int) subjects.WorkspaceAttempt {
	return subjects.WorkspaceAttempt{Attempt: attempt, Head: t.change.Head, PatchSHA256: t.change.PatchSHA256, Empty: t.change.Empty, Session: t.session}
}

// withAttempt returns a copy of w with rec as its record of rec.Attempt
// (replacing a record of the same attempt and any later one). The new
// attempt's head is not pushed yet: the heads delivered before stay, as
// the leases of its push.
func withAttempt(w *subjects.TaskWorkspace, rec subjects.WorkspaceAttempt) *subjects.TaskWorkspace {
	c := *w
	c.Pushed = false
	c.Attempts = nil
	for _, a := range w.Attempts {
		if a.Attempt < rec.Attempt {
			c.Attempts = append(c.Attempts, a)
		}
	}
	c.Attempts = append(c.Attempts, rec)
	return &c
}

// implementerWorkspace fills an implementer request's workspace fields.
func (t *taskRun) implementerWorkspace(req *runner.Request) {
	if t.ws == nil {
		return
	}
	pin := t.pinned()
	req.WorkspaceBase = pin.Base
	if last, ok := pin.Last(); ok && last.Attempt < req.Attempt {
		req.WorkspacePatch = last.PatchSHA256
	}
	req.Workspace = &runner.Workspace{Dir: t.ws.Dir(), Branch: t.ws.Branch(), Base: t.ws.Base(), Sandbox: sandboxPaths(t.ws)}
	if t.change != nil {
		req.Workspace.Head = t.change.Head
	}
}

// judgeWorkspace fills a judge request's workspace fields: the change it
// judges, with its diff stat and its patch bounded.
func (t *taskRun) judgeWorkspace(req *runner.Request) {
	if t.ws == nil || t.change == nil {
		return
	}
	ch := t.change
	req.WorkspaceBase = ch.Base
	req.WorkspacePatch = ch.PatchSHA256
	patch, _ := ch.PatchData()
	shown, note := boundPatch(patch, judgePatchBytes)
	req.Workspace = &runner.Workspace{Dir: t.ws.Dir(), Branch: t.ws.Branch(), Base: ch.Base, Head: ch.Head,
		Stat: diffStat(ch.Files), Patch: shown, PatchNote: note, Empty: ch.Empty, Sandbox: sandboxPaths(t.ws)}
}

// sandboxPaths are what a contained role sees of ws, when its adapter
// tells (the worker's does); otherwise none, and the runner shows the
// worktree alone.
func sandboxPaths(ws Workspace) sandbox.Paths {
	if s, ok := ws.(interface{ SandboxPaths() sandbox.Paths }); ok {
		return s.SandboxPaths()
	}
	return sandbox.Paths{}
}

// diffStat renders a change's files as a diff stat, one line a file.
func diffStat(files []subjects.WorkspaceFile) string {
	var b strings.Builder
	added, removed := 0, 0
	for _, f := range files {
		if f.Binary {
			fmt.Fprintf(&b, "%s %s | binary\n", f.Status, f.Path)
			continue
		}
		fmt.Fprintf(&b, "%s %s | +%d -%d\n", f.Status, f.Path, f.Added, f.Removed)
		added += f.Added
		removed += f.Removed
	}
	fmt.Fprintf(&b, "%d files changed, %d insertions(+), %d deletions(-)", len(files), added, removed)
	return b.String()
}

// boundPatch cuts a patch to at most limit bytes, at a line, and says what
// was cut ("" when nothing was). Binary hunks are left out: they mean
// nothing in a prompt.
func boundPatch(patch []byte, limit int) (string, string) {
	s := strings.ToValidUTF8(string(patch), "\uFFFD")
	var (
		b       strings.Builder
		binary  int
		cutRest bool
		inBin   bool
	)
	for line := range strings.Lines(s) {
		switch {
		case strings.HasPrefix(line, "diff --git "):
			inBin = false
		case strings.HasPrefix(line, "GIT binary patch"):
			inBin = true
			binary++
			b.WriteString("(binary patch left out)\n")
			continue
		}
		if inBin {
			continue
		}
		if b.Len()+len(line) > limit {
			cutRest = true
			break
		}
		b.WriteString(line)
	}
	var notes []string
	if cutRest {
		notes = append(notes, fmt.Sprintf("the patch is %d bytes; only its first %d bytes are shown", len(patch), b.Len()))
	}
	if binary > 0 {
		notes = append(notes, fmt.Sprintf("%d binary patch(es) left out", binary))
	}
	return b.String(), strings.Join(notes, "; ")
}

// pushWorkspace pushes the approved head when pushing is configured, and
// returns the task result's workspace part. The push is leased on the
// heads recorded before this one (a delivery that crashed may have pushed
// its own commit of the same change). A head recorded as pushed, with no
// worktree rebuilt for it, is not pushed again.
func (p *Pipeline) pushWorkspace(ctx context.Context, t *taskRun) (*subjects.WorkspaceResult, error) {
	if w := t.st.Workspace; t.ws == nil && w != nil && w.Pushed && w.Head() != "" {
		return &subjects.WorkspaceResult{Branch: w.Branch, Base: w.Base, Head: w.Head(), Pushed: true}, nil
	}
	if t.ws == nil || t.change == nil {
		return nil, nil
	}
	pin := t.pinned()
	head, err := t.ws.Head(ctx)
	if err != nil {
		return nil, fmt.Errorf("workspace: head: %w", err)
	}
	var leases []string
	if w := t.st.Workspace; w != nil {
		for _, h := range w.Heads {
			if h != head {
				leases = append(leases, h)
			}
		}
	}
	res := &subjects.WorkspaceResult{Branch: pin.Branch, Base: pin.Base, Head: head}
	if res.Pushed, err = p.d.Workspaces.Push(ctx, pin.Branch, head, leases...); err != nil {
		return res, fmt.Errorf("workspace: push %s: %w", pin.Branch, err)
	}
	return res, nil
}

// releaseWorkspace frees the delivery's worktree once it is done with the
// task: finished, parked, failed or handed back. A failed task's may be
// kept (the adapter's policy); the branch and the recorded change stay.
func (p *Pipeline) releaseWorkspace(ctx context.Context, t *taskRun, out consumers.Outcome) {
	if t == nil || t.ws == nil {
		return
	}
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	if err := t.ws.Release(rctx, out.Terminal == subjects.EventTaskFailed); err != nil {
		p.taskLog(t, "").Warn("releasing the workspace failed", "branch", t.ws.Branch(), "err", err)
	}
	t.ws = nil
}

// commitMessage is the message of an implementer attempt's commit: the
// task and attempt, and the first line of the role's reasoning (untrusted
// text, bounded to one line).
func commitMessage(t *taskRun, attempt int, reasoning string) string {
	msg := fmt.Sprintf("drover: %s attempt %d", subjects.HeaderSafe(t.req.ID, 128), attempt)
	if line, _, _ := strings.Cut(strings.TrimSpace(reasoning), "\n"); line != "" {
		msg += "\n\n" + subjects.HeaderSafe(line, 200)
	}
	return msg
}
