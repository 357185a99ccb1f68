// Package natstest starts embedded NATS servers with JetStream for tests.
//
// It is for tests only: import it from _test.go files, never from
// production code. Everything it starts is stopped when the test ends, so
// goleak checks keep passing. Package broker's own tests cannot use it
// (natstest imports broker).
package natstest

import (
	"context"
	"io"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/subjects"
)

// Option adjusts the configuration of the server Server starts.
type Option func(*broker.EmbeddedConfig)

// Sync sets the server's fsync interval; without it the server fsyncs
// before every acknowledgement (broker.EmbeddedConfig.Sync 0).
func Sync(d time.Duration) Option {
	return func(cfg *broker.EmbeddedConfig) { cfg.Sync = d }
}

// Server starts an embedded NATS server with JetStream in t.TempDir() on a
// random port of 127.0.0.1, stopped at test end.
//
// The server's warnings and errors go to the test's log (shown when the
// test fails or with -v), so a failed test says why the server refused.
//
// Under -short (make test-unit) it skips the test instead.
func Server(t testing.TB, opts ...Option) *broker.Embedded {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a NATS server: not run with -short")
	}
	cfg := broker.EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: t.TempDir()}
	for _, o := range opts {
		o(&cfg)
	}
	if cfg.Logger == nil {
		gate := &testGate{t: t}
		// Registered before the server's shutdown, so it runs after it.
		t.Cleanup(gate.close)
		cfg.Logger = slog.New(&testHandler{gate: gate})
	}
	srv, err := broker.StartEmbedded(cfg)
	require.NoError(t, err)
	t.Cleanup(srv.Shutdown)
	return srv
}

// Connect returns a plain nats.Connect connection to url and a JetStream
// context of it, made with opts; the connection is closed at test end.
func Connect(t testing.TB, url string, opts ...jetstream.JetStreamOpt) (*nats.Conn, jetstream.JetStream) {
	t.Helper()
	nc, err := nats.Connect(url)
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc, opts...)
	require.NoError(t, err)
	return nc, js
}

// testHandler writes records at warning level and above to a test's log
// until its gate closes: a server goroutine that logs after the test ended
// is silenced instead of panicking the test binary.
type testHandler struct {
	gate  *testGate
	attrs []slog.Attr
}

type testGate struct {
	t      testing.TB
	mu     sync.Mutex
	closed bool
}

func (g *testGate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.closed = true
}

func (h *testHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *testHandler) Handle(_ context.Context, r slog.Record) error {
	line := r.Level.String() + " nats-server: " + r.Message
	for _, a := range h.attrs {
		line += " " + a.String()
	}
	r.Attrs(func(a slog.Attr) bool { line += " " + a.String(); return true })
	h.gate.mu.Lock()
	defer h.gate.mu.Unlock()
	if !h.gate.closed {
		h.gate.t.Log(line)
	}
	return nil
}

func (h *testHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return &testHandler{gate: h.gate, attrs: append(slices.Clip(h.attrs), as...)}
}

func (h *testHandler) WithGroup(string) slog.Handler { return h }

// Quiet is a logger that discards everything.
func Quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// Provision provisions Drover's streams and buckets with s on js, logging
// to Quiet, and fails the test if that fails.
func Provision(t testing.TB, ctx context.Context, js jetstream.JetStream, s broker.Settings) *broker.Resources {
	t.Helper()
	res, err := broker.Provision(ctx, js, s, Quiet())
	require.NoError(t, err)
	return res
}

// Provisioned starts a server, connects, provisions Drover's streams and
// buckets under the default names (subjects.DefaultPrefix) and returns
// everything a test needs.
func Provisioned(t testing.TB, opts ...Option) (*broker.Embedded, *nats.Conn, jetstream.JetStream, *broker.Resources) {
	t.Helper()
	srv := Server(t, opts...)
	nc, js := Connect(t, srv.ClientURL())
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := Provision(t, ctx, js, broker.Settings{Names: subjects.MustNames(subjects.DefaultPrefix)})
	return srv, nc, js, res
}
