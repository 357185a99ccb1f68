package review

import (
	"context"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// TestHandleReviewerToken: the subject's sixth token is the reviewer, and a
// body naming someone else is refused before anything is read or decided;
// malformed subjects are refused with what they should be. (A decision
// that gets past these checks is tested against a real server in
// tests/review_bind_test.go.)
func TestHandleReviewerToken(t *testing.T) {
	t.Parallel()
	names := subjects.MustNames(subjects.DefaultPrefix)
	s := &Service{names: names}
	for _, tc := range []struct {
		name, subject, body, want string
	}{
		{"another reviewer in the body", names.ReviewSubjectAs("wf", "T1", "alice"), `{"decision":"approve","reviewer":"bob"}`,
			`reviewer "bob" in the body is not "alice"`},
		{"escaped reviewer, another in the body", names.ReviewSubjectAs("wf", "T1", "alice@example.com"), `{"decision":"approve","reviewer":"alice"}`,
			`reviewer "alice" in the body is not "alice@example.com"`},
		{"too many tokens", names.ReviewSubjectAs("wf", "T1", "alice") + ".x", `{}`, `is not <prefix>.ctl.review.<workflow>.<task>[.<reviewer>]`},
		{"too few tokens", "drover.ctl.review.wf", `{}`, `is not <prefix>.ctl.review.<workflow>.<task>[.<reviewer>]`},
		{"a reviewer token that is not canonical", names.ReviewSubject("wf", "T1") + ".a=2e", `{}`, `token "a=2e"`},
		{"a reserved reviewer", names.ReviewSubject("wf", "T1") + "._", `{}`, `token "_"`},
	} {
		reply := s.handle(context.Background(), &nats.Msg{Subject: tc.subject, Data: []byte(tc.body)})
		require.Contains(t, reply.Error, tc.want, tc.name)
	}
}
