package ops_test

import (
	"errors"
	"net/http"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/ops"
)

// The readiness notes follow /readyz's first line, ready or not, and
// change neither its status nor that line; /livez has none.
func TestReadyNotes(t *testing.T) {
	t.Parallel()
	notes := func() []string { return []string{"sandbox: mode none: agents run uncontained", "two\nlines"} }
	for _, tc := range []struct {
		name  string
		ready error
		code  int
		want  string
	}{
		{"ready", nil, http.StatusOK, "ok\nwarning: sandbox: mode none: agents run uncontained\nwarning: two lines\n"},
		{"not ready", errors.New("draining"), http.StatusServiceUnavailable, "not ready: draining\nwarning: sandbox: mode none: agents run uncontained\nwarning: two lines\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tb := &testBundle{t: t, logs: &syncBuffer{}, client: &http.Client{}}
			tb.serve(ops.Listen("127.0.0.1:0", nil, func() error { return tc.ready }, prometheus.NewRegistry(),
				ops.WithLog(tb.log()), ops.WithReadyNotes(notes)))
			code, body := tb.get("/readyz")
			require.Equal(t, tc.code, code)
			require.Equal(t, tc.want, body)
			code, body = tb.get("/livez")
			require.Equal(t, http.StatusOK, code)
			require.Equal(t, "ok\n", body)
		})
	}
}
