package worker_test

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/internal/ops"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/internal/sandbox"
	"github.com/droverhq/drover/internal/worker"
)

// A worker that runs agents with the sandbox off says so: a warning in
// its log at start, and a note in its readiness report (/readyz and its
// status), while it stays ready. With the sandbox on, or no agents, there
// is no note.
func TestSandboxNoneIsWarnedAndNoted(t *testing.T) {
	srv := natstest.Server(t, natstest.Sync(time.Second))
	for _, tc := range []struct {
		name   string
		mode   string
		agents bool
		noted  bool
	}{
		{"none, agents", sandbox.ModeNone, true, true},
		{"none, no agents", sandbox.ModeNone, false, false},
		{"bubblewrap, agents", sandbox.ModeBubblewrap, true, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sb, err := sandbox.New(sandbox.Config{Mode: tc.mode})
			require.NoError(t, err)
			if !sb.None() {
				if err := sb.Check(context.Background()); errors.Is(err, sandbox.ErrUnavailable) {
					t.Skipf("no bubblewrap here: %v", err)
				}
			}
			nc, _ := natstest.Connect(t, srv.ClientURL())
			logs := &lockedBuffer{}
			w, err := worker.New(nc, worker.Config{
				Concurrency: 1, FetchWait: 200 * time.Millisecond, Runners: runner.SimSet(runner.NewSim(runner.SimOptions{})),
				Log: slog.New(slog.NewTextHandler(logs, nil)), Sandbox: sb, ExecRunners: tc.agents,
			})
			require.NoError(t, err)
			run(t, w)

			hs, err := ops.Listen("127.0.0.1:0", w.CheckLive, w.CheckReady, prometheus.NewRegistry(), ops.WithReadyNotes(w.ReadyNotes))
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.Background())
			served := make(chan error, 1)
			go func() { served <- hs.Serve(ctx) }()
			t.Cleanup(func() { cancel(); _ = natstest.Recv(t, served, 30*time.Second) })
			client := &http.Client{Timeout: 10 * time.Second}
			var body string
			require.Eventually(t, func() bool {
				resp, err := client.Get("http://" + hs.Addr() + "/readyz")
				if err != nil {
					return false
				}
				defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
				b, _ := io.ReadAll(resp.Body)
				body = string(b)
				return resp.StatusCode == http.StatusOK
			}, 30*time.Second, 20*time.Millisecond, "the worker stays ready: %s", body)

			const note = "sandbox: mode none: agents run uncontained"
			if tc.noted {
				require.Contains(t, body, "ok\nwarning: "+note)
				require.Contains(t, logs.String(), "level=WARN msg=\"the sandbox is off (sandbox mode none): agents run uncontained\"")
				require.Len(t, w.Status().Warnings, 1)
				require.Contains(t, w.Status().Warnings[0], note)
			} else {
				require.Equal(t, "ok\n", body)
				require.NotContains(t, logs.String(), "uncontained")
				require.Empty(t, w.Status().Warnings)
			}
		})
	}
}
