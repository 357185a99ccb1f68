package cli

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/dlq"
)

func TestCLIActor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		user, host, want string
	}{
		{"alice", "build-01", "cli:alice@build-01"},
		{"", "", "cli:unknown@unknown"},
		{"a@b", "h\n", "cli:ab@h"},
		{"\x1b[31m", "h", "cli:[31m@h"},
		{strings.Repeat("u", 300), "h", "cli:" + strings.Repeat("u", dlq.MaxActorBytes-4)},
	}
	for _, tt := range tests {
		got := cliActor(tt.user, tt.host)
		require.Equal(t, tt.want, got, "%q %q", tt.user, tt.host)
		require.NoError(t, dlq.ValidateActor(got))
	}
}
