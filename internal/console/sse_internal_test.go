package console

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/natstest"
	"github.com/droverhq/drover/subjects"
)

// A browser that opens the event stream and never reads: once its
// socket's buffers are full, its write waits at most EventWriteTimeout and
// its stream ends, freeing its slot; the hub and the browser that reads
// get every message meanwhile.
func TestStalledStreamDropped(t *testing.T) {
	t.Parallel()
	s, err := New(Deps{Names: subjects.MustNames(subjects.DefaultPrefix), Log: natstest.Quiet()}, Config{EventWriteTimeout: 200 * time.Millisecond})
	require.NoError(t, err)
	srv := httptest.NewServer(s.Handler())
	t.Cleanup(srv.Close)
	addr := strings.TrimPrefix(srv.URL, "http://")

	// The stalled one: a raw connection with a small receive buffer that
	// sends its request and never reads.
	stalled, err := net.DialTimeout("tcp", addr, 5*time.Second)
	require.NoError(t, err)
	t.Cleanup(func() { _ = stalled.Close() })
	require.NoError(t, stalled.(*net.TCPConn).SetReadBuffer(4096))
	_, err = io.WriteString(stalled, "GET /events HTTP/1.1\r\nHost: "+addr+"\r\n\r\n")
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, srv.URL+"/events", nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	require.Equal(t, http.StatusOK, resp.StatusCode)
	reader := bufio.NewReaderSize(resp.Body, 1<<20)
	require.Eventually(t, func() bool { return s.liveStreams() == 2 && s.hub.clientCount() == 2 },
		10*time.Second, 5*time.Millisecond, "both streams open")

	// Big batches fill the stalled socket's buffers; the reader must get
	// each one, in order, while the stalled stream is dropped.
	blob := strings.Repeat("x", 256<<10)
	next := func(i int) {
		t.Helper()
		s.hub.push(map[string]any{"a": i, "b": blob})
		s.hub.flush()
		want := fmt.Sprintf(`"a":%d,`, i)
		for {
			line, err := reader.ReadString('\n')
			require.NoError(t, err, "the reading browser's stream ended")
			if strings.HasPrefix(line, "data: ") {
				require.Contains(t, line[:min(len(line), 64)], want, "messages arrive in order")
				return
			}
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	i := 0
	for ; s.liveStreams() > 1; i++ {
		require.True(t, time.Now().Before(deadline), "the stalled stream still holds its slot after %d batches of 256 KiB", i)
		next(i)
	}
	require.Equal(t, 1, s.hub.clientCount(), "the hub dropped the stalled client")
	next(i) // the reader goes on
	t.Logf("the stalled stream ended after %d batches of 256 KiB", i)
}
