package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/internal/redact"
	"github.com/droverhq/drover/subjects"
)

const testSecret = "s3cr3t-value-0xfeed"

func TestWithRedactResult(t *testing.T) {
	t.Parallel()
	inner := Func{ID: "x", F: func(context.Context, Request) (Result, error) {
		return Result{
			Output:    json.RawMessage(`{"change":"printed ` + testSecret + `","n":1}`),
			Action:    "change " + testSecret,
			Reasoning: "why " + testSecret,
			Metadata: map[string]any{
				"s": testSecret, "n": 3, "list": []string{testSecret}, "any": []any{testSecret, 1.5},
				"map": map[string]any{"k": testSecret}, "usage": OpenAIUsage{TotalTokens: 5},
				"struct": struct{ V string }{testSecret},
			},
		}, nil
	}}
	r := Chain(inner, WithRedact(redact.New(testSecret)))
	require.Equal(t, "x", r.Identity())
	res, err := r.Run(context.Background(), Request{Role: subjects.RoleImplementer})
	require.NoError(t, err)
	dump := fmt.Sprintf("%s %+v", res.Output, res)
	require.NotContains(t, dump, testSecret)
	require.JSONEq(t, `{"change":"printed [REDACTED]","n":1}`, string(res.Output))
	require.Equal(t, "why [REDACTED]", res.Reasoning)
	require.Equal(t, OpenAIUsage{TotalTokens: 5}, res.Metadata["usage"], "values without a secret are kept as they are")
	require.Equal(t, 3, res.Metadata["n"])
	require.Equal(t, json.RawMessage(`{"V":"[REDACTED]"}`), res.Metadata["struct"])
}

func TestWithRedactError(t *testing.T) {
	t.Parallel()
	inner := Func{ID: "x", F: func(context.Context, Request) (Result, error) {
		return Result{Output: json.RawMessage(`{}`)}, Permanentf("exec x: exit status 1: token=%s", testSecret)
	}}
	_, err := Chain(inner, WithRedact(redact.New(testSecret))).Run(context.Background(), Request{})
	require.EqualError(t, err, "exec x: exit status 1: token=[REDACTED]")
	require.ErrorIs(t, err, ErrPermanent, "errors.Is still works")
}

func TestWithRedactEmpty(t *testing.T) {
	t.Parallel()
	inner := &Sim{}
	require.Same(t, inner, WithRedact(redact.New())(inner))
}

type closer struct {
	Func
	n   *int
	err error
}

func (c closer) Close() error { *c.n++; return c.err }

func TestSetClose(t *testing.T) {
	t.Parallel()
	n := 0
	boom := errors.New("boom")
	s := Set{Planner: closer{n: &n}, Implementer: Func{ID: "i"}, Judge: closer{n: &n, err: boom}}
	require.ErrorIs(t, s.Close(), boom)
	require.Equal(t, 2, n)
	var _ io.Closer = s
}
