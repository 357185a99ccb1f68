//go:build unix

package runner

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

func TestClaudeSessionFile(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		dir, id, want, err string
	}{
		{"/work/ws/worktrees/w-01", "6f894ff9-46e3-42bb-9204-766c2e9aa0de",
			".claude/projects/-work-ws-worktrees-w-01/6f894ff9-46e3-42bb-9204-766c2e9aa0de.jsonl", ""},
		{"/a/b.c_d", "s1", ".claude/projects/-a-b-c-d/s1.jsonl", ""},
		{"/a", "../../etc/passwd", "", "session"},
		{"/a", "-rf", "", "session"},
		{"/" + strings.Repeat("x", 250), "s1", "", "too long"},
	} {
		got, err := claudeSessionFile(tc.dir, tc.id)
		if tc.err != "" {
			require.ErrorContains(t, err, tc.err, tc.dir)
			continue
		}
		require.NoError(t, err)
		require.Equal(t, tc.want, got)
	}
}

// The session file is the agent's: keeping it reads it bounded and never
// through a link out of the task's HOME; restoring it never writes
// through one.
func TestSessionFilesStayInTheHome(t *testing.T) {
	t.Parallel()
	const id = "0b9c3a57-1f5e-4bb2-9d9c-1234567890ab"
	work := filepath.Join(t.TempDir(), "work")
	require.NoError(t, os.MkdirAll(work, 0o700))
	rel, err := claudeSessionFile(work, id)
	require.NoError(t, err)
	outside := filepath.Join(t.TempDir(), "secret")
	require.NoError(t, os.WriteFile(outside, []byte("worker secret\n"), 0o600))

	newHome := func(t *testing.T) string {
		home := filepath.Join(t.TempDir(), "home")
		require.NoError(t, os.MkdirAll(filepath.Join(home, filepath.Dir(rel)), 0o700))
		return home
	}
	t.Run("kept", func(t *testing.T) {
		home := newHome(t)
		require.NoError(t, os.WriteFile(filepath.Join(home, rel), []byte(`{"sessionId":"`+id+`"}`+"\n"), 0o600))
		st, note := keepSession(AgentClaudeCode, home, work, id)
		require.Empty(t, note)
		require.Equal(t, &SessionState{Agent: AgentClaudeCode, ID: id, Data: []byte(`{"sessionId":"` + id + `"}` + "\n")}, st)
	})
	t.Run("a link out of the home is not read", func(t *testing.T) {
		home := newHome(t)
		require.NoError(t, os.Symlink(outside, filepath.Join(home, rel)))
		st, note := keepSession(AgentClaudeCode, home, work, id)
		require.Nil(t, st)
		require.Contains(t, note, "not kept")
	})
	t.Run("too big is not kept", func(t *testing.T) {
		home := newHome(t)
		f, err := os.Create(filepath.Join(home, rel))
		require.NoError(t, err)
		require.NoError(t, f.Truncate(MaxSessionBytes+1))
		require.NoError(t, f.Close())
		st, note := keepSession(AgentClaudeCode, home, work, id)
		require.Nil(t, st)
		require.Contains(t, note, "exceeds")
	})
	t.Run("restore does not write through a link", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "home")
		require.NoError(t, os.MkdirAll(filepath.Join(home, ".claude"), 0o700))
		target := t.TempDir()
		require.NoError(t, os.Symlink(target, filepath.Join(home, ".claude", "projects")))
		err := restoreSession(AgentClaudeCode, home, work, id, []byte("x\n"))
		require.Error(t, err)
		ents, err := os.ReadDir(target)
		require.NoError(t, err)
		require.Empty(t, ents, "nothing written outside the home")
	})
	t.Run("restore replaces a planted link", func(t *testing.T) {
		home := newHome(t)
		require.NoError(t, os.Symlink(outside, filepath.Join(home, rel)))
		require.NoError(t, restoreSession(AgentClaudeCode, home, work, id, []byte("restored\n")))
		b, err := os.ReadFile(outside)
		require.NoError(t, err)
		require.Equal(t, "worker secret\n", string(b), "the link's target is untouched")
		b, err = os.ReadFile(filepath.Join(home, rel))
		require.NoError(t, err)
		require.Equal(t, "restored\n", string(b))
	})
	t.Run("restore refuses a state too big", func(t *testing.T) {
		err := restoreSession(AgentClaudeCode, newHome(t), work, id, make([]byte, MaxSessionBytes+1))
		require.ErrorContains(t, err, "exceeds")
	})
}

// Codex's rollout file is found under the private HOME's .codex/sessions,
// kept bounded and restored where Codex finds it, never through a link
// out of the home.
func TestCodexRolloutStaysInTheHome(t *testing.T) {
	t.Parallel()
	const id = "01a24e72-123f-7551-b21c-6912f9670369"
	rel := filepath.Join(".codex", "sessions", "2026", "12", "07", "rollout-2026-12-07T03-00-28-"+id+".jsonl")
	outside := t.TempDir()
	require.NoError(t, os.WriteFile(filepath.Join(outside, filepath.Base(rel)), []byte("worker secret\n"), 0o600))
	newHome := func(t *testing.T) string {
		home := filepath.Join(t.TempDir(), "home")
		require.NoError(t, os.MkdirAll(filepath.Join(home, filepath.Dir(rel)), 0o700))
		return home
	}
	rollouts := func(t *testing.T, home string) []string {
		got, err := filepath.Glob(filepath.Join(home, ".codex", "sessions", "*", "*", "*", "rollout-*-"+id+".jsonl"))
		require.NoError(t, err)
		return got
	}
	t.Run("kept", func(t *testing.T) {
		home := newHome(t)
		require.NoError(t, os.WriteFile(filepath.Join(home, rel), []byte("rollout\n"), 0o600))
		require.NoError(t, os.WriteFile(filepath.Join(home, filepath.Dir(rel), "rollout-2026-12-07T03-00-29-01a24e72-0000-7551-b21c-6912f9670369.jsonl"), []byte("another\n"), 0o600))
		st, note := keepSession(AgentCodex, home, "/work", id)
		require.Empty(t, note)
		require.Equal(t, &SessionState{Agent: AgentCodex, ID: id, Data: []byte("rollout\n")}, st)
	})
	t.Run("none", func(t *testing.T) {
		st, note := keepSession(AgentCodex, newHome(t), "/work", id)
		require.Nil(t, st)
		require.Equal(t, "not kept: the CLI wrote no session file", note)
		st, note = keepSession(AgentCodex, t.TempDir(), "/work", id)
		require.Nil(t, st)
		require.Equal(t, "not kept: the CLI wrote no session file", note, "no .codex at all")
	})
	t.Run("a link out of the home is not read", func(t *testing.T) {
		home := newHome(t)
		require.NoError(t, os.Symlink(filepath.Join(outside, filepath.Base(rel)), filepath.Join(home, rel)))
		st, note := keepSession(AgentCodex, home, "/work", id)
		require.Nil(t, st)
		require.Contains(t, note, "not kept")
	})
	t.Run("a linked sessions directory is not walked", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "home")
		require.NoError(t, os.MkdirAll(filepath.Join(home, ".codex"), 0o700))
		require.NoError(t, os.Symlink(outside, filepath.Join(home, ".codex", "sessions")))
		st, note := keepSession(AgentCodex, home, "/work", id)
		require.Nil(t, st)
		require.Contains(t, note, "not kept")
		require.Error(t, restoreSession(AgentCodex, home, "/work", id, []byte("x\n")))
		b, err := os.ReadFile(filepath.Join(outside, filepath.Base(rel)))
		require.NoError(t, err)
		require.Equal(t, "worker secret\n", string(b), "nothing written outside the home")
	})
	t.Run("a bounded walk", func(t *testing.T) {
		home := newHome(t)
		for i := range 10 {
			require.NoError(t, os.WriteFile(filepath.Join(home, filepath.Dir(rel), fmt.Sprintf("f%02d", i)), nil, 0o600))
		}
		require.NoError(t, os.WriteFile(filepath.Join(home, rel), []byte("rollout\n"), 0o600))
		root, err := os.OpenRoot(home)
		require.NoError(t, err)
		defer func() { _ = root.Close() }()
		_, err = findRollout(root, id, 10)
		require.ErrorContains(t, err, "more than 10 entries under .codex/sessions")
		got, err := findRollout(root, id, 20)
		require.NoError(t, err)
		require.Equal(t, rel, got)
		got, err = findRollout(root, id[len(id)-12:], 20)
		require.NoError(t, err)
		require.Empty(t, got, "the whole ID, not its end")
	})
	t.Run("restore replaces the rollout in place", func(t *testing.T) {
		home := newHome(t)
		require.NoError(t, os.Symlink(filepath.Join(outside, filepath.Base(rel)), filepath.Join(home, rel)))
		require.NoError(t, restoreSession(AgentCodex, home, "/work", id, []byte("restored\n")))
		require.Equal(t, []string{filepath.Join(home, rel)}, rollouts(t, home))
		b, err := os.ReadFile(filepath.Join(home, rel))
		require.NoError(t, err)
		require.Equal(t, "restored\n", string(b))
		b, err = os.ReadFile(filepath.Join(outside, filepath.Base(rel)))
		require.NoError(t, err)
		require.Equal(t, "worker secret\n", string(b), "the link's target is untouched")
	})
	t.Run("restore into a new home", func(t *testing.T) {
		home := filepath.Join(t.TempDir(), "home")
		require.NoError(t, restoreSession(AgentCodex, home, "/work", id, []byte("restored\n")))
		got := rollouts(t, home)
		require.Len(t, got, 1)
		st, note := keepSession(AgentCodex, home, "/work", id)
		require.Empty(t, note)
		require.Equal(t, []byte("restored\n"), st.Data)
	})
	t.Run("restore refuses a bad ID or a state too big", func(t *testing.T) {
		require.ErrorContains(t, restoreSession(AgentCodex, newHome(t), "/work", "../../x", []byte("x\n")), "session")
		require.ErrorContains(t, restoreSession(AgentCodex, newHome(t), "/work", id, make([]byte, MaxSessionBytes+1)), "exceeds")
	})
}

func TestCodexRolloutFile(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 12, 7, 3, 0, 28, 0, time.UTC)
	got, err := codexRolloutFile("01a24e72-123f-7551-b21c-6912f9670369", at)
	require.NoError(t, err)
	require.Equal(t, ".codex/sessions/2026/12/07/rollout-2026-12-07T03-00-28-01a24e72-123f-7551-b21c-6912f9670369.jsonl", got)
	_, err = codexRolloutFile("-x", at)
	require.Error(t, err)
}

// A resumed Codex run reports the thread's whole usage: the run's own is
// that less the thread's total before it, as the rollout it resumed
// records it and never more than the record's.
func TestCodexOwnUsage(t *testing.T) {
	t.Parallel()
	line := func(in, cached, out int) string {
		return fmt.Sprintf(`{"type":"event_msg","payload":{"type":"token_count","info":{"total_token_usage":{"input_tokens":%d,"cached_input_tokens":%d,"output_tokens":%d}}}}`+"\n", in, cached, out)
	}
	record := &Session{InputTokens: 1000, CacheReadTokens: 400, OutputTokens: 100}
	for _, tc := range []struct {
		name  string
		state string
		s     *Session
		usage map[string]any
		want  map[string]any
	}{
		{"the last total counts", line(10, 0, 1) + `{"type":"response_item"}` + "\n" + line(1000, 400, 100) + `{"type":"event_msg","payload":{"type":"token_count","info":null}}` + "\n", record,
			map[string]any{"input_tokens": int64(3000), "output_tokens": int64(150), "cache_read_input_tokens": int64(1400)},
			map[string]any{"input_tokens": int64(2000), "output_tokens": int64(50), "cache_read_input_tokens": int64(1000)}},
		{"no cache reads left", line(1000, 400, 100), record,
			map[string]any{"input_tokens": int64(3000), "output_tokens": int64(150), "cache_read_input_tokens": int64(400)},
			map[string]any{"input_tokens": int64(2000), "output_tokens": int64(50)}},
		{"a count below the total stays", line(1000, 0, 100), record,
			map[string]any{"input_tokens": int64(500), "output_tokens": int64(150)},
			map[string]any{"input_tokens": int64(500), "output_tokens": int64(50)}},
		{"a rollout claiming more than the record", line(2900, 0, 140), record,
			map[string]any{"input_tokens": int64(3000), "output_tokens": int64(150)},
			map[string]any{"input_tokens": int64(2000), "output_tokens": int64(50)}},
		{"a rollout claiming less", line(100, 0, 10), record,
			map[string]any{"input_tokens": int64(3000), "output_tokens": int64(150)},
			map[string]any{"input_tokens": int64(2900), "output_tokens": int64(140)}},
		{"no record", line(1000, 0, 100), &Session{},
			map[string]any{"input_tokens": int64(3000), "output_tokens": int64(150)},
			map[string]any{"input_tokens": int64(3000), "output_tokens": int64(150)}},
		{"no total recorded", "not a rollout\n" + line(-1, 0, 1), record,
			map[string]any{"input_tokens": int64(500), "output_tokens": int64(150)},
			map[string]any{"input_tokens": int64(500), "output_tokens": int64(150)}},
		{"not resumed", line(1000, 0, 100), nil,
			map[string]any{"input_tokens": int64(3000), "output_tokens": int64(150)},
			map[string]any{"input_tokens": int64(3000), "output_tokens": int64(150)}},
	} {
		if tc.s != nil {
			tc.s.State = []byte(tc.state)
		}
		md := map[string]any{"usage": tc.usage}
		session := maps.Clone(tc.usage)
		codexOwnUsage(context.Background(), md, tc.s)
		require.Equal(t, tc.want, md["usage"], tc.name)
		require.Equal(t, session, md["session_usage"], "%s: the thread's usage as Codex reported it", tc.name)
	}
}

func TestResumeRefused(t *testing.T) {
	t.Parallel()
	msg, ok := resumeRefused(AgentClaudeCode, errors.New("exec claude: exit status 1: No conversation found with session ID: abc"))
	require.True(t, ok)
	require.Equal(t, "No conversation found with session ID: abc", msg)
	_, ok = resumeRefused(AgentClaudeCode, errors.New("exec claude: exit status 1: API Error: 500"))
	require.False(t, ok, "any other failure is retried as it is")
	_, ok = resumeRefused(AgentCodex, errors.New("No conversation found"))
	require.False(t, ok)
	msg, ok = resumeRefused(AgentCodex, errors.New("exec codex: exit status 1: Error: thread/resume: thread/resume failed: no rollout found for thread id 01a2"))
	require.True(t, ok)
	require.Equal(t, "thread/resume failed: no rollout found for thread id 01a2", msg)
	_, ok = resumeRefused(AgentCodex, errors.New("exec codex: exit status 1: unexpected status 500"))
	require.False(t, ok)
}
