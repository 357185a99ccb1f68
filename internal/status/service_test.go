package status_test

import (
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/status"
)

func TestStatusServiceVersionIsSemVer(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"1.2.3":          "1.2.3",
		"v1.2.3":         "1.2.3",
		"v1.2.3-rc.1+g1": "1.2.3-rc.1+g1",
		"dev":            "0.0.0-dev",
		"":               "0.0.0-unknown",
		"abc/def 7":      "0.0.0-abc-def-7",
		"0123":           "0.0.0-unknown", // a numeric pre-release may not start with 0
	} {
		require.Equal(t, want, status.ServiceVersion(in), in)
	}
}

func TestStatusSubjectPerInstance(t *testing.T) {
	t.Parallel()
	require.Equal(t, "status.ABC123", status.StatusSubject("ABC123"))
}
