package workspace

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/internal/sandbox"
)

// readyTTL is how long a Ready answer is reused.
const readyTTL = 5 * time.Second

// diskTTL is how long a disk usage figure is reused by Stats.
const diskTTL = 10 * time.Second

// mirrorConfig is set on the mirror at Start: the remote, and git tuned for
// many files and many worktrees; the hooks path is an empty directory so no
// hook ever runs; no worktree's own config.worktree is read (an agent can
// write its worktree's admin directory).
func mirrorConfig(repo, hooks string) [][2]string {
	return [][2]string{
		{"remote.origin.url", repo},
		{"remote.origin.fetch", "+refs/heads/*:refs/remotes/origin/*"},
		{"core.hooksPath", hooks},
		{"core.untrackedCache", "true"},
		{"status.showUntrackedFiles", "all"}, // lets status -uall use the untracked cache
		{"core.fsmonitor", "false"},
		{"core.preloadIndex", "true"},
		{"core.logAllRefUpdates", "false"},
		{"index.version", "4"},
		{"feature.manyFiles", "true"},
		{"checkout.workers", "0"},
		{"gc.auto", "0"},
		{"maintenance.auto", "false"},
		{"commit.gpgSign", "false"},
		{"advice.detachedHead", "false"},
		{"fetch.writeCommitGraph", "false"},
		{"diff.noprefix", "false"},
		{"diff.mnemonicPrefix", "false"},
		{"diff.renames", "false"},
		{"worktree.guessRemote", "false"},
		{"extensions.worktreeConfig", "false"},
	}
}

// Manager owns one worker's mirror and worktrees.
type Manager struct {
	cfg    Config
	sb     *sandbox.Sandbox // nil: uncontained
	log    *slog.Logger
	git    *gitRunner
	mirror string // Dir/mirror.git
	wtRoot string // Dir/wt
	tmp    string // Dir/tmp

	slots chan struct{} // nil: unbounded

	mu      sync.Mutex
	free    []string              // released worktree dirs, reusable
	open    map[string]*Workspace // by branch
	kept    map[string]string     // kept worktree dir -> branch
	nextID  int
	closed  bool
	defHead string // the remote's default branch, refs/heads/...

	fetchMu sync.Mutex
	flight  *fetchCall

	// wtLock orders the commands that create or remove a worktree's admin
	// directory (write) against those that read every worktree's (read:
	// checkout -B, fetch): git reads a half-made one as a fatal error.
	wtLock sync.RWMutex

	readyMu   sync.Mutex
	readyAt   time.Time
	readyErr  error
	diskMu    sync.Mutex
	diskAt    time.Time
	diskBytes int64

	fetches, pushes, pushedRefs, pushRetries atomic.Int64
	fetchHook                                func() // tests: runs inside each fetch

	pusher *pusher
}

// Deps are what a Manager works with.
type Deps struct {
	// Sandbox contains the setup and cleanup commands and the merge check
	// (the worker sets it from the sandbox: section). nil: uncontained, as
	// sandbox mode none; their environment is built all the same.
	Sandbox *sandbox.Sandbox
	// Log is the Manager's logger; nil discards.
	Log *slog.Logger
}

// New checks cfg (Validate) and returns a Manager; Start prepares it.
func New(deps Deps, cfg Config) (*Manager, error) {
	if !cfg.Enabled() {
		return nil, fmt.Errorf("%w: workspace.repo: required", ErrInvalidConfig)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	home := filepath.Join(cfg.Dir, "home")
	g, err := newGitRunner(home, filepath.Join(cfg.Dir, "mirror.git"), filepath.Join(cfg.Dir, "tmp"), cfg.GitTimeout)
	if err != nil {
		return nil, err
	}
	m := &Manager{
		cfg: cfg, sb: deps.Sandbox, log: log.With("component", "workspace"), git: g,
		mirror: filepath.Join(cfg.Dir, "mirror.git"),
		wtRoot: filepath.Join(cfg.Dir, "wt"),
		tmp:    filepath.Join(cfg.Dir, "tmp"),
		open:   map[string]*Workspace{},
		kept:   map[string]string{},
	}
	if cfg.MaxWorktrees > 0 {
		m.slots = make(chan struct{}, cfg.MaxWorktrees)
	}
	m.pusher = newPusher(m)
	return m, nil
}

// Config returns the validated configuration (defaults filled).
func (m *Manager) Config() Config { return m.cfg }

// Start makes the mirror (a bare repository under Dir/mirror.git) or reuses
// it, fetches, finds the remote's default branch, prunes the worktrees an
// earlier run left (except those kept on purpose) and starts the pusher.
func (m *Manager) Start(ctx context.Context) error {
	for _, d := range []string{m.cfg.Dir, filepath.Join(m.cfg.Dir, "home"), filepath.Join(m.cfg.Dir, "hooks"), m.wtRoot, m.tmp} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return fmt.Errorf("workspace: %w", err)
		}
	}
	if _, err := os.Stat(filepath.Join(m.mirror, "HEAD")); errors.Is(err, fs.ErrNotExist) {
		if _, err := m.git.out(ctx, "", "init", "-q", "--bare", m.mirror); err != nil {
			return fmt.Errorf("workspace: mirror: %w", err)
		}
	}
	for _, kv := range mirrorConfig(m.cfg.Repo, filepath.Join(m.cfg.Dir, "hooks")) {
		if _, err := m.git.out(ctx, "", "--git-dir", m.mirror, "config", kv[0], kv[1]); err != nil {
			return fmt.Errorf("workspace: mirror: %w", err)
		}
	}
	if err := m.pruneStale(ctx); err != nil {
		return err
	}
	if err := m.fetch(ctx); err != nil {
		return err
	}
	m.pusher.start()
	return nil
}

// Close stops the pusher after a bounded flush of what is queued; it removes
// nothing. Open and Push fail with ErrClosed afterwards.
func (m *Manager) Close() error {
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return nil
	}
	m.closed = true
	m.mu.Unlock()
	m.pusher.stop()
	return nil
}

// ResolveBase fetches (sharing a fetch already running) and resolves BaseRef
// to a commit: a branch of the remote, a tag, or a commit; empty BaseRef is
// the remote's default branch.
func (m *Manager) ResolveBase(ctx context.Context) (string, error) {
	if err := m.fetch(ctx); err != nil {
		return "", err
	}
	return m.resolve(ctx, m.cfg.BaseRef)
}

func (m *Manager) resolve(ctx context.Context, ref string) (string, error) {
	var candidates []string
	if ref == "" {
		m.mu.Lock()
		def := m.defHead
		m.mu.Unlock()
		if def == "" {
			return "", errors.New("workspace: the remote has no default branch (HEAD); set workspace.base_ref")
		}
		candidates = []string{"refs/remotes/origin/" + strings.TrimPrefix(def, "refs/heads/")}
	} else {
		short := strings.TrimPrefix(ref, "refs/heads/")
		candidates = []string{"refs/remotes/origin/" + short, "refs/tags/" + strings.TrimPrefix(ref, "refs/tags/"), ref}
	}
	for _, c := range candidates {
		sha, err := m.git.out(ctx, "", "--git-dir", m.mirror, "rev-parse", "-q", "--verify", "--end-of-options", c+"^{commit}")
		if err == nil && sha != "" {
			return sha, nil
		}
	}
	return "", fmt.Errorf("workspace: base ref %.80q not found in %s", ref, m.cfg.Repo)
}

// fetchCall is a fetch in flight; callers that arrive meanwhile wait for it.
type fetchCall struct {
	done    chan struct{}
	err     error
	waiters atomic.Int32
}

// fetch runs one fetch of the remote, or joins the one running.
func (m *Manager) fetch(ctx context.Context) error {
	m.fetchMu.Lock()
	if f := m.flight; f != nil {
		f.waiters.Add(1)
		m.fetchMu.Unlock()
		select {
		case <-f.done:
			return f.err
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f := &fetchCall{done: make(chan struct{})}
	m.flight = f
	m.fetchMu.Unlock()

	f.err = m.doFetch(context.WithoutCancel(ctx))
	m.fetchMu.Lock()
	m.flight = nil
	m.fetchMu.Unlock()
	close(f.done)
	return f.err
}

func (m *Manager) doFetch(ctx context.Context) error {
	m.fetches.Add(1)
	if m.fetchHook != nil {
		m.fetchHook()
	}
	m.wtLock.RLock()
	defer m.wtLock.RUnlock()
	if _, err := m.git.out(ctx, "", "--git-dir", m.mirror, "fetch", "-q", "--prune", "--no-tags", "--no-write-fetch-head",
		"origin", "+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"); err != nil {
		return fmt.Errorf("workspace: fetch %s: %w", m.cfg.Repo, err)
	}
	out, err := m.git.out(ctx, "", "--git-dir", m.mirror, "ls-remote", "--symref", "origin", "HEAD")
	if err != nil {
		return fmt.Errorf("workspace: ls-remote %s: %w", m.cfg.Repo, err)
	}
	for _, line := range strings.Split(out, "\n") {
		if rest, ok := strings.CutPrefix(line, "ref: "); ok {
			if ref, _, ok := strings.Cut(rest, "\t"); ok {
				m.mu.Lock()
				m.defHead = ref
				m.mu.Unlock()
			}
		}
	}
	return nil
}

// Ready reports whether the repository can be reached: an ls-remote with
// the git timeout (at most 10 seconds), its answer reused for 5 seconds.
func (m *Manager) Ready(ctx context.Context) error {
	m.readyMu.Lock()
	defer m.readyMu.Unlock()
	if !m.readyAt.IsZero() && time.Since(m.readyAt) < readyTTL {
		return m.readyErr
	}
	ctx, cancel := context.WithTimeout(ctx, min(m.cfg.GitTimeout, 10*time.Second))
	defer cancel()
	_, err := m.git.out(ctx, "", "ls-remote", "-q", "--end-of-options", m.cfg.Repo, "HEAD")
	if err != nil {
		err = fmt.Errorf("workspace: repository %s unreachable: %w", m.cfg.Repo, err)
	}
	m.readyAt, m.readyErr = time.Now(), err
	return err
}

// Stats are the Manager's counters.
type Stats struct {
	Worktrees   int   // worktrees on disk that are not kept (open and reusable)
	Open        int   // worktrees held by an open Workspace
	Kept        int   // worktrees kept on purpose
	DiskBytes   int64 // bytes under Dir (refreshed at most every 10 s)
	Fetches     int64 // fetches run (a coalesced fetch counts once)
	Pushes      int64 // git push commands run
	PushedRefs  int64 // refs pushed or found up to date
	PushRetries int64 // pushes that failed for the remote and were retried
}

// Stats returns the counters and the disk use.
func (m *Manager) Stats() Stats {
	m.mu.Lock()
	open := len(m.open) // with no bound nobody waits for a slot
	if m.slots != nil {
		open = len(m.slots)
	}
	s := Stats{Worktrees: len(m.free) + open, Open: open, Kept: len(m.kept)}
	m.mu.Unlock()
	s.Fetches, s.Pushes, s.PushedRefs, s.PushRetries = m.fetches.Load(), m.pushes.Load(), m.pushedRefs.Load(), m.pushRetries.Load()
	s.DiskBytes = m.disk()
	return s
}

func (m *Manager) disk() int64 {
	m.diskMu.Lock()
	defer m.diskMu.Unlock()
	if !m.diskAt.IsZero() && time.Since(m.diskAt) < diskTTL {
		return m.diskBytes
	}
	var n int64
	_ = filepath.WalkDir(m.cfg.Dir, func(_ string, d fs.DirEntry, err error) error {
		if err == nil && d.Type().IsRegular() {
			if fi, err := d.Info(); err == nil {
				n += fi.Size()
			}
		}
		return nil
	})
	m.diskAt, m.diskBytes = time.Now(), n
	return n
}
