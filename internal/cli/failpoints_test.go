package cli

import (
	"bytes"
	"context"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestServeFailpointFlags: serve's fault-injection flags exist only in a
// build with -tags failpoints; a release build neither has nor lists them,
// so no flag or DROVER_* variable can turn them on.
func TestServeFailpointFlags(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	root := newRoot(&out, &out)
	serve, _, err := root.Find([]string{"serve"})
	require.NoError(t, err)
	for _, name := range []string{"fault-stop-after-commits", "sim-call-log"} {
		if Failpoints {
			require.NotNil(t, serve.Flags().Lookup(name), "a failpoints build has --%s", name)
		} else {
			require.Nil(t, serve.Flags().Lookup(name), "a release build has no --%s", name)
		}
	}
	require.Equal(t, 0, Execute(context.Background(), []string{"serve", "--help"}, &out, &out))
	require.NotContains(t, out.String(), "--fault-")
	require.NotContains(t, out.String(), "--sim-call-log")
}
