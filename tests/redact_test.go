package tests

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/config"
	"github.com/droverhq/drover/internal/prompt"
	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/worker"
	"github.com/droverhq/drover/subjects"
)

// leakySecret is the token the careless agent prints everywhere.
const leakySecret = "tok-LEAK-5e1f9a3b7c"

// TestSecretsNeverReachTheRecord runs real exec runners whose agent prints
// a secret of its environment to stderr and into every answer: the
// implementer fails once then succeeds (task "ok"), or always fails until
// the task is dead-lettered (task "fail"); the judge rejects attempt 1 with
// the secret in its feedback, which becomes a lesson. The secret is in no
// message of the audit stream, the DLQ (headers and body), the lessons
// stream, the state and cache buckets, and not in the worker's log, while
// the masked text is there.
func TestSecretsNeverReachTheRecord(t *testing.T) {
	t.Parallel()
	script, err := filepath.Abs(filepath.Join("testdata", "leaky_agent.sh"))
	require.NoError(t, err)
	state := t.TempDir()
	role := func(name string) string {
		return fmt.Sprintf("  %s: {runner: exec, timeout: 1m, exec: {argv: [sh, %q, %s], env: {LEAKY_API_TOKEN: %s, LEAKY_STATE: %q}, inherit: [PATH]}}\n",
			name, script, name, leakySecret, state)
	}
	f, err := config.Parse([]byte("roles:\n" + role("planner") + role("implementer") + role("judge")))
	require.NoError(t, err)
	set, err := f.Runners(prompt.Defaults(), runner.NewSim(runner.SimOptions{}))
	require.NoError(t, err)
	t.Cleanup(func() { _ = set.Close() })

	// The worker's log is redacted as drover serve's is.
	var logs syncBuffer
	log := slog.New(redact.New(f.Secrets()...).Handler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug})))

	b := setup(t)
	b.startWorker(worker.Config{
		Concurrency: 2, Runners: set, Log: log,
		Consumer: broker.ConsumerSettings{MaxDeliver: 2},
	})
	after := b.submit(task("leaky", "ok"), task("leaky", "fail"))
	got := b.waitTerminal("leaky", after, 2)
	require.Equal(t, subjects.EventTaskCompleted, got["ok"].EventType, got["ok"].Error)
	require.Equal(t, subjects.EventTaskFailed, got["fail"].EventType)

	// The record shows that the secret was there, masked.
	var retried, rejected bool
	for _, ev := range b.events("leaky") {
		if ev.EventType == subjects.EventTaskRetried && strings.Contains(ev.Error, "auth failed for "+redact.Mask) {
			retried = true
		}
		if ev.EventType == subjects.EventJudgeVerdict && ev.Action == subjects.VerdictReject {
			require.Contains(t, ev.Reasoning, "do not hard-code "+redact.Mask)
			rejected = true
		}
	}
	require.True(t, retried, "a task_retried event quotes the masked stderr")
	require.True(t, rejected, "the judge's rejection is recorded, masked")
	dead := b.dlq()
	require.Len(t, dead, 1)
	require.Contains(t, dead[0].Header.Get("Drover-Error"), redact.Mask)

	// Not one byte of the secret anywhere.
	streams := []string{
		b.names.AuditStream(), b.names.DLQStream(), b.names.LessonsStream(),
		"KV_" + b.names.StateBucket(), "KV_" + b.names.CacheBucket(),
	}
	lessons := 0
	for _, name := range streams {
		msgs := b.rawStream(name)
		if name == b.names.LessonsStream() {
			lessons = len(msgs)
		}
		for _, m := range msgs {
			require.NotContains(t, string(m.Data), leakySecret, "%s #%d", name, m.Sequence)
			for k, vs := range m.Header {
				for _, v := range vs {
					require.NotContains(t, v, leakySecret, "%s #%d header %s", name, m.Sequence, k)
				}
			}
		}
	}
	require.Positive(t, lessons, "the rejection became a lesson")
	require.NotEmpty(t, logs.String())
	require.NotContains(t, logs.String(), leakySecret)
}

// rawStream returns every message of a stream, raw.
func (b *bundle) rawStream(name string) []*jetstream.RawStreamMsg {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := b.js.Stream(ctx, name)
	require.NoError(b.t, err, name)
	info, err := s.Info(ctx)
	require.NoError(b.t, err)
	var out []*jetstream.RawStreamMsg
	for seq := info.State.FirstSeq; info.State.Msgs > 0 && seq <= info.State.LastSeq; seq++ {
		m, err := s.GetMsg(ctx, seq)
		if err != nil {
			continue // deleted (a KV value replaced or a rolled-up key)
		}
		out = append(out, m)
	}
	return out
}

// syncBuffer is a bytes.Buffer safe for the worker's goroutines.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.buf.String()
}
