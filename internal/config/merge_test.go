package config

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/mergequeue"
	"github.com/droverhq/drover/internal/workspace"
)

func TestValidateMerge(t *testing.T) {
	t.Parallel()
	ok := mergequeue.Config{Target: "main"}
	cases := []struct {
		name       string
		mode       string
		merge      mergequeue.Config
		workspaces bool
		field      string // in the error; "" = valid
	}{
		{name: "default", mode: ""},
		{name: "branch", mode: "branch"},
		{name: "merge", mode: "merge", merge: ok, workspaces: true},
		{name: "merge without workspaces", mode: "merge", merge: ok, field: "delivery"},
		{name: "merge without target", mode: "merge", workspaces: true, field: "merge.target"},
		{name: "bad target", mode: "merge", merge: mergequeue.Config{Target: "a..b"}, workspaces: true, field: "merge.target"},
		{name: "bad strategy", mode: "merge", merge: mergequeue.Config{Target: "main", Strategy: "squash"}, workspaces: true, field: "merge.strategy"},
		{name: "bad batch", mode: "merge", merge: mergequeue.Config{Target: "main", Batch: -1}, workspaces: true, field: "merge.batch"},
		{name: "short lease", mode: "merge", merge: mergequeue.Config{Target: "main", LeaseTTL: time.Millisecond}, workspaces: true, field: "merge.lease_ttl"},
		{name: "negative check timeout", mode: "merge", merge: mergequeue.Config{Target: "main", Check: workspace.Command{Argv: []string{"true"}, Timeout: -time.Second}}, workspaces: true, field: "merge.check.timeout"},
		{name: "pull_request is not the merge queue's", mode: "pull_request"},
		{name: "an unknown mode is Delivery.validate's to report", mode: "carrier-pigeon"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			err := validateMerge(tc.mode, tc.merge, tc.workspaces)
			if tc.field == "" {
				require.NoError(t, err)
				return
			}
			require.ErrorIs(t, err, mergequeue.ErrInvalidConfig, "%v", err)
			require.ErrorContains(t, err, tc.field)
		})
	}
}
