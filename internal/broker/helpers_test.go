package broker

import (
	"bytes"
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// skipShort skips a test that starts a server under -short (make
// test-unit).
func skipShort(t testing.TB) {
	t.Helper()
	if testing.Short() {
		t.Skip("starts a NATS server: not run with -short")
	}
}

// startServer runs an embedded server on a random port for one test.
func startServer(t *testing.T) *Embedded {
	t.Helper()
	skipShort(t)
	e, err := StartEmbedded(EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: t.TempDir()})
	require.NoError(t, err)
	t.Cleanup(e.Shutdown)
	return e
}

// newJS starts a server and returns a JetStream client of it.
func newJS(t *testing.T) jetstream.JetStream {
	t.Helper()
	return connectJS(t, startServer(t))
}

func connectJS(t *testing.T, e *Embedded) jetstream.JetStream {
	t.Helper()
	nc, err := Connect(testCtx(t), e.ClientURL(), t.Name())
	require.NoError(t, err)
	t.Cleanup(nc.Close)
	js, err := jetstream.New(nc)
	require.NoError(t, err)
	return js
}

func testCtx(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// logBuffer is a concurrency-safe buffer behind a text slog.Logger.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func newLog() (*slog.Logger, *logBuffer) {
	b := &logBuffer{}
	return slog.New(slog.NewTextHandler(b, nil)), b
}

func (b *logBuffer) Reset() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Reset()
}
