package runner

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// A Gemini session kept from one HOME and worktree is restored into
// another HOME for another worktree path: into the project whose
// .project_root names the new worktree, made when there is none, and
// replaced in place when the HOME has it already (the same worker).
func TestGeminiSessionFileMapsProject(t *testing.T) {
	t.Parallel()
	const id = "829b596c-1fda-4acb-9900-0e8abb850228"
	state := []byte(`{"sessionId":"` + id + `"}` + "\n")
	// As the CLI left it: project "work" of dir, its marker, its chat.
	home, dir := t.TempDir(), t.TempDir()
	chat := filepath.Join(home, ".gemini", "tmp", "work", "chats", "session-2026-12-07T04-09-829b596c.jsonl")
	require.NoError(t, os.MkdirAll(filepath.Dir(chat), 0o700))
	require.NoError(t, os.WriteFile(filepath.Join(home, ".gemini", "tmp", "work", ".project_root"), []byte(dir), 0o600))
	require.NoError(t, os.WriteFile(chat, state, 0o600))
	st, note := keepSession(AgentGemini, home, dir, id)
	require.Empty(t, note)
	require.Equal(t, &SessionState{Agent: AgentGemini, ID: id, Data: state}, st)
	_, note = keepSession(AgentGemini, home, t.TempDir(), id)
	require.Equal(t, "not kept: the CLI wrote no session file", note, "another worktree's project has none")

	// Another worker: a new HOME, a worktree at another path, and a
	// project of another path the agent planted under the name Drover uses.
	home2, dir2 := t.TempDir(), t.TempDir()
	planted := filepath.Join(home2, ".gemini", "tmp", "drover-829b596c")
	require.NoError(t, os.MkdirAll(planted, 0o700))
	require.NoError(t, os.Symlink("/etc/passwd", filepath.Join(planted, ".project_root")))
	require.NoError(t, restoreSession(AgentGemini, home2, dir2, id, state))
	owner, err := os.ReadFile(filepath.Join(planted, ".project_root"))
	require.NoError(t, err)
	require.Equal(t, dir2, string(owner), "the link replaced by the new worktree's marker")
	got, err := filepath.Glob(filepath.Join(planted, "chats", "session-*-829b596c.jsonl"))
	require.NoError(t, err)
	require.Len(t, got, 1)
	st, note = keepSession(AgentGemini, home2, dir2, id)
	require.Empty(t, note)
	require.Equal(t, state, st.Data)

	// The same worker: restored over the CLI's own file.
	require.NoError(t, restoreSession(AgentGemini, home, dir, id, []byte("restored\n")))
	b, err := os.ReadFile(chat)
	require.NoError(t, err)
	require.Equal(t, "restored\n", string(b))
	_, err = os.Stat(filepath.Join(home, ".gemini", "tmp", "drover-829b596c"))
	require.ErrorIs(t, err, os.ErrNotExist, "no second project for the same worktree")
}

// A restored Gemini session answers each tool call once: the user
// messages that repeat results its toolCalls hold are dropped, any other
// kept as it is.
func TestGeminiOnceAnswered(t *testing.T) {
	t.Parallel()
	call := `{"id":"m1","type":"gemini","content":"","toolCalls":[{"id":"c1","name":"write_file","result":[{"functionResponse":{"id":"c1"}}]}]}`
	for _, tc := range []struct {
		name     string
		in, want []string
	}{
		{"repeated result dropped",
			[]string{`{"sessionId":"s"}`, call, `{"id":"u1","type":"user","content":[{"functionResponse":{"id":"c1","name":"write_file"}}]}`, `{"$set":{"lastUpdated":"t"}}`},
			[]string{`{"sessionId":"s"}`, call, `{"$set":{"lastUpdated":"t"}}`}},
		{"a result the toolCalls lack kept",
			[]string{call, `{"id":"u1","type":"user","content":[{"functionResponse":{"id":"c2"}}]}`},
			[]string{call, `{"id":"u1","type":"user","content":[{"functionResponse":{"id":"c2"}}]}`}},
		{"a call without a result keeps its response",
			[]string{`{"type":"gemini","toolCalls":[{"id":"c1"}]}`, `{"type":"user","content":[{"functionResponse":{"id":"c1"}}]}`},
			[]string{`{"type":"gemini","toolCalls":[{"id":"c1"}]}`, `{"type":"user","content":[{"functionResponse":{"id":"c1"}}]}`}},
		{"text kept", []string{call, `{"type":"user","content":[{"text":"go on"}]}`, `{"type":"user","content":"plain"}`},
			[]string{call, `{"type":"user","content":[{"text":"go on"}]}`, `{"type":"user","content":"plain"}`}},
		{"not JSON kept", []string{"not a session"}, []string{"not a session"}},
	} {
		got := geminiOnceAnswered([]byte(strings.Join(tc.in, "\n") + "\n"))
		require.Equal(t, strings.Join(tc.want, "\n")+"\n", string(got), tc.name)
	}
}
