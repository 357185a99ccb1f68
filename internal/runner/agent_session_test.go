//go:build unix

package runner

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

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

func TestResumeRefused(t *testing.T) {
	t.Parallel()
	msg, ok := resumeRefused(AgentClaudeCode, errors.New("exec claude: exit status 1: No conversation found with session ID: abc"))
	require.True(t, ok)
	require.Equal(t, "No conversation found with session ID: abc", msg)
	_, ok = resumeRefused(AgentClaudeCode, errors.New("exec claude: exit status 1: API Error: 500"))
	require.False(t, ok, "any other failure is retried as it is")
	_, ok = resumeRefused(AgentCodex, errors.New("No conversation found"))
	require.False(t, ok)
}
