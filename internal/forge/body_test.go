package forge_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/droverhq/drover/internal/forge"
)

func TestTitle(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, id, scope, want string }{
		{"first line", "T1", "Add the thing\nand more", "T1: Add the thing"},
		{"no scope", "T1", "  ", "T1"},
		{"white space", "T2", "  many   spaces\there ", "T2: many spaces here"},
		{"control characters", "T3", "bell\a and \x1b[31mred", "T3: bell and [31mred"},
		{"carriage return", "T4", "one\rtwo", "T4: one"},
		{"bounded", "T5", strings.Repeat("é", 500), "T5: " + strings.Repeat("é", 195) + "…"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, forge.Title(forge.Task{ID: tc.id, Scope: tc.scope}))
		})
	}
}

func TestFence(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ name, in, want string }{
		{"plain", "x", "```text\nx\n```\n"},
		{"a fence inside", "a\n```\n@admin <img src=x>\n```", "````text\na\n```\n@admin <img src=x>\n```\n````\n"},
		{"a long run", "``````", "```````text\n``````\n```````\n"},
		{"trailing newlines", "x\n\n", "```text\nx\n```\n"},
		{"bidi controls", "a\u202eb", "```text\nab\n```\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, forge.Fence(tc.in, "text"))
		})
	}
}

func TestCode(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "`wf/T1`", forge.Code("wf/T1"))
	assert.Equal(t, "``a`b``", forge.Code("a`b"))
	assert.Equal(t, "`` `x ``", forge.Code("`x"))
	assert.Equal(t, "`a b`", forge.Code("a\nb"))
}

func TestBody(t *testing.T) {
	t.Parallel()
	task := forge.Task{
		Workflow: "wf", ID: "T1",
		Scope:    "Add it.\n```\n# not a heading\n```",
		Plan:     `{"plan":"do it","steps":["a"]}`,
		Verdict:  `{"action":"approve","feedback":"@everyone looks good"}`,
		Review:   "approved by alice: ship it",
		Attempts: 2,
	}
	body := forge.Body(task)
	for _, want := range []string{
		"task `wf/T1`",
		"### Scope\n\n````text\nAdd it.\n```\n# not a heading\n```\n````\n",
		"### Plan\n\n```text\n{\"plan\":\"do it\",\"steps\":[\"a\"]}\n```\n",
		"### Judge's verdict\n\n```text\n{\"action\":\"approve\",\"feedback\":\"@everyone looks good\"}\n```\n",
		"### Reviewer's decision\n\n```text\napproved by alice: ship it\n```\n",
		"### Attempts\n\n2\n",
		"```sh\ndrover audit --workflow wf --task T1\ndrover task diff wf/T1\n```\n",
	} {
		assert.Contains(t, body, want)
	}

	noReview := forge.Body(forge.Task{Workflow: "wf", ID: "T1", Attempts: 1})
	assert.NotContains(t, noReview, "Reviewer")
	assert.Contains(t, noReview, "### Plan\n\n```text\n(none)\n```\n")
}

func TestBodyIsBounded(t *testing.T) {
	t.Parallel()
	huge := strings.Repeat("x", 1<<20)
	body := forge.Body(forge.Task{Workflow: "wf", ID: "T1", Scope: huge, Plan: huge, Verdict: huge, Review: huge, Attempts: 1})
	assert.Less(t, len(body), 60100)
	assert.Contains(t, body, "(cut)")
	assert.Contains(t, body, "drover task diff wf/T1", "the audit commands survive the bounds")
}

func TestBodyQuotesOddIDs(t *testing.T) {
	t.Parallel()
	body := forge.Body(forge.Task{Workflow: "w f", ID: "it's", Attempts: 1})
	assert.Contains(t, body, `drover audit --workflow 'w f' --task 'it'\''s'`)
}
