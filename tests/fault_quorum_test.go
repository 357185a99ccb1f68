package tests

import (
	"context"
	"io"
	"net/http"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireQuorumSignal waits until the worker serving its endpoints on addr
// reports JetStream's quorum as up (true) or lost (false) through all three
// of /readyz, drover_jetstream_available and its log.
func (b *bundle) requireQuorumSignal(w *proc, addr string, up bool) {
	b.t.Helper()
	get := func(path string) (int, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr+path, nil)
		if err != nil {
			return 0, "", err
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer func() { _ = resp.Body.Close() }() // read, or abandoned: nothing to lose
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, string(body), err
	}
	require.EventuallyWithT(b.t, func(c *assert.CollectT) {
		code, body, err := get("/readyz")
		if !assert.NoError(c, err) {
			return
		}
		if up {
			assert.Equal(c, http.StatusOK, code, body)
		} else {
			assert.Equal(c, http.StatusServiceUnavailable, code)
			assert.Contains(c, body, "no quorum", "the /readyz reason")
		}
		_, metrics, err := get("/metrics")
		if !assert.NoError(c, err) {
			return
		}
		want := "drover_jetstream_available 0"
		if up {
			want = "drover_jetstream_available 1"
		}
		assert.Contains(c, metrics, want+"\n", "metric: want %q", want)
	}, 30*time.Second, 200*time.Millisecond, "no quorum signal (up=%v)", up)
	if up {
		require.True(b.t, !w.logged(quorumLost) || w.logged("JetStream answers again"), "the log says it is back")
	} else {
		require.True(b.t, w.logged(quorumLost), "the log says no quorum")
	}
}

// quorumLost is the worker's log message when JetStream stops answering.
const quorumLost = "no quorum: JetStream does not answer; nothing is acked or completed until it does"
