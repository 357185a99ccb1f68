package bench

import (
	"context"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"time"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/workspace"
)

// DefaultWorkspaceTasks is drover bench's default for
// Config.WorkspaceTasks when the workspace phase runs.
const DefaultWorkspaceTasks = 20

// Workspace is what the workspace phase measured: a task's workspace
// overhead on the operator's repository, everything but the agent.
type Workspace struct {
	Tasks int `json:"tasks"`
	// Files and Bytes are the size of the repository at the base: its
	// files and their bytes in a worktree.
	Files int   `json:"files"`
	Bytes int64 `json:"bytes"`
	// MirrorStart is the Manager's Start: the mirror's first clone (a
	// fetch when Config.Workspace.Dir already holds a mirror).
	MirrorStart   time.Duration `json:"-"`
	MirrorStartMS float64       `json:"mirror_start_ms"`
	// FirstOpen is the untimed warm-up task's Open, which adds the
	// worktree the timed tasks reuse (as a worker's first task does).
	FirstOpen   time.Duration `json:"-"`
	FirstOpenMS float64       `json:"first_open_ms"`
	// Open, Commit (a one-file change committed and recorded with its
	// patch), Release and Total (the three) are per task.
	Open    Dist `json:"open"`
	Commit  Dist `json:"commit"`
	Release Dist `json:"release"`
	Total   Dist `json:"total"`
}

// runWorkspace runs the workspace phase with the worker's workspace
// Manager on cfg.Workspace: Start, then for each task Open at the base, a
// line appended to one file, Commit and Release. Push stays off and the
// phase never calls Push: nothing is written to the repository. Without
// cfg.Workspace.Dir the mirror is in a temporary directory, removed after.
// The credentials of the repository's URL are masked in its errors and
// log, as the worker masks them.
func runWorkspace(ctx context.Context, cfg Config) (*Workspace, error) {
	red := redact.New(redact.URLSecrets(cfg.Workspace.Repo)...)
	cfg.Log = slog.New(red.Handler(cfg.Log.Handler()))
	ws, err := measureWorkspace(ctx, cfg)
	return ws, red.Error(err)
}

func measureWorkspace(ctx context.Context, cfg Config) (*Workspace, error) {
	ctx, cancel := context.WithTimeout(ctx, cfg.Timeout)
	defer cancel()
	wc := cfg.Workspace
	wc.Push, wc.Setup, wc.Cleanup, wc.CopyIgnored, wc.MaxWorktrees = false, nil, nil, nil, 1
	if wc.Dir == "" {
		dir, err := os.MkdirTemp("", "drover-bench-ws-")
		if err != nil {
			return nil, fmt.Errorf("bench: workspace: %w", err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
		wc.Dir = dir
	}
	m, err := workspace.New(workspace.Deps{Log: cfg.Log}, wc)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	t0 := time.Now()
	if err := m.Start(ctx); err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	defer func() { _ = m.Close() }()
	out, file := &Workspace{Tasks: cfg.WorkspaceTasks, MirrorStart: time.Since(t0)}, ""
	base, err := m.ResolveBase(ctx)
	if err != nil {
		return nil, fmt.Errorf("bench: %w", err)
	}
	// The warm-up task, untimed but for its Open: the repository's size
	// and the file each task changes.
	wf := NewWorkflowID()
	steps, err := workspaceTask(ctx, m, wf, "T0", base, false, func(dir string) (err error) {
		out.Files, out.Bytes, file, err = treeSize(dir)
		if err == nil && file == "" {
			err = fmt.Errorf("the repository has no regular file at %s", base)
		}
		return err
	})
	if err != nil {
		return nil, err
	}
	out.FirstOpen = steps[0]
	var opens, commits, releases, totals []time.Duration
	for i := range cfg.WorkspaceTasks {
		id := fmt.Sprintf("T%d", i+1)
		s, err := workspaceTask(ctx, m, wf, id, base, true, func(dir string) error {
			return appendLine(filepath.Join(dir, file), "drover bench "+wf+" "+id+"\n")
		})
		if err != nil {
			return nil, err
		}
		opens, commits, releases = append(opens, s[0]), append(commits, s[1]), append(releases, s[2])
		totals = append(totals, s[0]+s[1]+s[2])
	}
	out.Open, out.Commit, out.Release, out.Total = newDist(opens), newDist(commits), newDist(releases), newDist(totals)
	out.MirrorStartMS, out.FirstOpenMS = MS(out.MirrorStart), MS(out.FirstOpen)
	return out, nil
}

// workspaceTask opens task id's workspace at base, runs change in its
// directory, commits when commit (the change must be one file, with a
// patch) and releases it. It returns the times of Open, change and
// Commit, and Release.
func workspaceTask(ctx context.Context, m *workspace.Manager, wf, id, base string, commit bool, change func(dir string) error) (steps [3]time.Duration, err error) {
	branch, err := m.Branch(wf, id, "")
	if err != nil {
		return steps, fmt.Errorf("bench: %w", err)
	}
	t0 := time.Now()
	w, err := m.Open(ctx, workspace.Spec{Workflow: wf, Task: id, Branch: branch, Base: base})
	if err != nil {
		return steps, fmt.Errorf("bench: workspace: task %s: %w", id, err)
	}
	steps[0] = time.Since(t0)
	t0 = time.Now()
	err = change(w.Dir())
	if err == nil && commit {
		var ch workspace.Change
		ch, err = w.Commit(ctx, workspace.Trailers{Workflow: wf, Task: id, Attempt: 1, EventID: "E" + id}, "")
		if err == nil && (len(ch.Files) != 1 || len(ch.Patch) == 0) {
			err = fmt.Errorf("%d files and %d patch bytes recorded, want one file", len(ch.Files), len(ch.Patch))
		}
	}
	steps[1] = time.Since(t0)
	t0 = time.Now()
	if rerr := w.Release(context.WithoutCancel(ctx), false); err == nil {
		err = rerr
	}
	steps[2] = time.Since(t0)
	if err != nil {
		return steps, fmt.Errorf("bench: workspace: task %s: %w", id, err)
	}
	return steps, nil
}

// treeSize counts the regular files of a worktree (.git aside) and their
// bytes, and returns the first one in lexical order.
func treeSize(dir string) (files int, bytes int64, first string, err error) {
	err = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case d.Name() == ".git":
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		case !d.Type().IsRegular():
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		if first == "" {
			first, _ = filepath.Rel(dir, p)
		}
		files, bytes = files+1, bytes+fi.Size()
		return nil
	})
	return files, bytes, first, err
}

// appendLine appends line to the file at p.
func appendLine(p, line string) error {
	f, err := os.OpenFile(p, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	_, err = f.WriteString(line)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
