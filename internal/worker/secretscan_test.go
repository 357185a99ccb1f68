package worker_test

import (
	"context"
	"encoding/hex"
	"log/slog"
	"path/filepath"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// An exec agent writes the worker's configured secret into its change:
// as is, as base64 of a longer text (wrapped by base64(1) at 76 columns),
// as hex, or in the message of its own commit; another commits a forged
// Drover-Merge-Head trailer. Each such task fails at once with role_failed and a reason that
// names the secret and the file, not the value; it is not retried. The
// secret, in any of those forms, is in no message of any stream (audit,
// DLQ, state, cache, blobs, lessons), in no line of the worker's log, and
// not on the remote, where no branch of those tasks was pushed. A clean
// task beside them completes and is pushed.
func TestWorkspaceSecretInChangeFails(t *testing.T) {
	secret := "hostile-tok-" + randomHex(t, 12)
	b := newWSBundle(t)
	// As drover serve passes them: by value, and named by their variable.
	b.secrets = []string{secret}
	b.named = []redact.Secret{{Name: "HOSTILE_TOKEN", Value: secret}}
	var logs lockedBuffer
	b.log = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	script, err := filepath.Abs(filepath.Join("testdata", "secret_agent.sh"))
	require.NoError(t, err)
	impl, err := runner.NewExec(subjects.RoleImplementer, runner.ExecConfig{Argv: []string{"sh", script},
		Env: map[string]string{"HOSTILE_TOKEN": secret}, Inherit: []string{"PATH"}}, prompt.Defaults())
	require.NoError(t, err)
	a := &agent{t: t}
	set := a.set()
	// As config.File.Runners wraps every runner of a configured worker.
	set.Implementer = runner.WithRecover()(runner.WithRedact(redact.New(secret))(impl))
	b.start(t, set, t.TempDir(), true, 5*time.Second)

	scan := pipeline.ErrSecretInChange.Error() + " "
	leaky := map[string]string{"plain-1": scan + "(HOSTILE_TOKEN, plain) in leak.env", "b64-1": scan + "(HOSTILE_TOKEN, base64) in notes/blob.txt",
		"hex-1": scan + "(HOSTILE_TOKEN, hex) in dump.hex", "msg-1": scan + "(HOSTILE_TOKEN, plain) in a commit message",
		"trailer-1": `has a "Drover-Merge-Head:" line in its message; Drover- trailers are Drover's alone`}
	var reqs []subjects.TaskRequest
	for id := range leaky {
		reqs = append(reqs, subjects.TaskRequest{ID: id, Scope: "s"})
	}
	reqs = append(reqs, subjects.TaskRequest{ID: "good-1", Scope: "s"})
	term := b.submit(t, "wf-leak", reqs...)

	for id, where := range leaky {
		ev := term[id]
		require.Equal(t, subjects.EventTaskFailed, ev.EventType, "%s: %+v", id, ev)
		require.Equal(t, string(subjects.ReasonRoleFailed), ev.Action, id)
		require.Contains(t, ev.Error, where, id)
		require.Empty(t, b.events(t, "wf-leak", id, subjects.EventTaskRetried), "%s: not retried", id)
		require.Empty(t, b.events(t, "wf-leak", id, subjects.EventImplementerChange), "%s: no change recorded", id)
	}
	require.Equal(t, subjects.EventTaskCompleted, term["good-1"].EventType, "%+v", term["good-1"])

	// Not on the remote: no branch of a leaky task, and no object holds it.
	branches := git(t, b.repo, "for-each-ref", "--format=%(refname)")
	require.Contains(t, branches, "refs/heads/drover/wf-leak/good-1")
	for id := range leaky {
		require.NotContains(t, branches, id)
	}
	found := redact.New(secret)
	require.False(t, found.Contains(git(t, b.repo, "log", "--all", "-p", "--format=%H %B")), "the remote holds the secret")

	// In no message of any stream, no header, no log line.
	for name, msgs := range everyStream(t, b.js) {
		for _, m := range msgs {
			require.False(t, found.Contains(string(m.Data)), "%s #%d: %s", name, m.Sequence, m.Data)
			for k, vs := range m.Header {
				for _, v := range vs {
					require.False(t, found.Contains(v), "%s #%d header %s", name, m.Sequence, k)
				}
			}
		}
	}
	require.NotEmpty(t, logs.String())
	require.False(t, found.Contains(logs.String()), "the log holds the secret")
}

func randomHex(t *testing.T, n int) string {
	return hex.EncodeToString(randomBytes(t, n))
}

// everyStream reads every message of every stream of the server, raw.
func everyStream(t *testing.T, js jetstream.JetStream) map[string][]*jetstream.RawStreamMsg {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out := map[string][]*jetstream.RawStreamMsg{}
	names := js.StreamNames(ctx)
	for name := range names.Name() {
		s, err := js.Stream(ctx, name)
		require.NoError(t, err, name)
		info, err := s.Info(ctx)
		require.NoError(t, err)
		for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
			m, err := s.GetMsg(ctx, seq)
			if err != nil {
				continue // deleted (a KV value replaced, a task acked)
			}
			out[name] = append(out[name], m)
		}
	}
	require.NoError(t, names.Err())
	require.NotEmpty(t, out)
	return out
}
