package runner

import (
	"context"
	"net/http"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// TestOpenAITraceParentHeader: every request carries the role's
// traceparent header when there is one, and none otherwise.
func TestOpenAITraceParentHeader(t *testing.T) {
	t.Parallel()
	var (
		mu  sync.Mutex
		got [][]string
	)
	b := setupOpenAI(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Values("traceparent"))
		mu.Unlock()
		completion(testPlanOut)(w, r)
	})
	o := b.runner(t, subjects.RolePlanner, OpenAIConfig{})
	const tp = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	req := simReq(t, subjects.RolePlanner, "")
	req.TraceParent = tp
	_, err := o.Run(context.Background(), req)
	require.NoError(t, err)
	req.TraceParent = ""
	_, err = o.Run(context.Background(), req)
	require.NoError(t, err)
	mu.Lock()
	defer mu.Unlock()
	require.Equal(t, [][]string{{tp}, nil}, got)
}
