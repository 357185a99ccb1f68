package bench

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
)

func TestProfilePath(t *testing.T) {
	for _, tc := range []struct{ phase, file string }{
		{"drover", "drover.pprof"},
		{"contract-ops (overlapped)", "contract-ops-overlapped.pprof"},
		{"contract-ops (fully cached)", "contract-ops-fully-cached.pprof"},
		{"minimal worker", "minimal-worker.pprof"},
		{"Floor (overlapped)", "floor-overlapped.pprof"},
		{"  a/../b  ", "a-b.pprof"}, // no separator, no leading or trailing dash
	} {
		require.Equal(t, filepath.Join("dir", tc.file), profilePath("dir", tc.phase), tc.phase)
	}
}
