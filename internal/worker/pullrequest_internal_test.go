package worker

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/droverhq/drover/internal/pipeline"
)

func TestPullRequestTexts(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, plan, want string
	}{
		{"plan and steps", `{"plan":"do it","steps":["read","write"]}`, "do it\n1. read\n2. write"},
		{"other JSON", `{"approach":"x"}`, "{\n  \"approach\": \"x\"\n}"},
		{"not JSON", `plain words`, "plain words"},
		{"none", ``, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, planText(json.RawMessage(tc.plan)))
		})
	}
	at := time.Date(2026, 12, 1, 10, 0, 0, 0, time.UTC)
	assert.Equal(t, "approve by alice at 2026-12-01 10:00:00 UTC\n\nship it",
		reviewText(&pipeline.ReviewDecision{Decision: "approve", Reviewer: "alice", Comment: "ship it", At: at}))
	assert.Empty(t, reviewText(nil))
}

func TestPullRequestBase(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ configured, baseRef, want string }{
		{"release", "main", "release"},
		{"", "main", "main"},
		{"", "refs/heads/dev", "dev"},
		{"", "", ""},
	} {
		assert.Equal(t, tc.want, baseOf(tc.configured, tc.baseRef))
	}
}
