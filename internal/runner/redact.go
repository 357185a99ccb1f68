package runner

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	"github.com/droverhq/drover/internal/redact"
)

// WithRedact masks the secrets r knows in everything the inner runner
// hands back: every string of the Result (Output's JSON strings, Action,
// Reasoning, Metadata's strings at any depth), the text of its error,
// which still wraps the original (errors.Is and errors.As see through),
// and every line of its live activity (Request.Activity).
// Audit events, DLQ headers, lessons, task state, logs and spans are all
// built from these, so a secret an agent prints never reaches the record.
// With an empty r it returns the runner unchanged.
func WithRedact(r *redact.Redactor) Middleware {
	return func(next Runner) Runner {
		if r.Empty() {
			return next
		}
		return Func{ID: next.Identity(), InCaller: RunsInline(next), F: func(ctx context.Context, req Request) (Result, error) {
			if emit := req.Activity; emit != nil {
				req.Activity = func(a Activity) {
					a.Tool, a.Text = r.String(a.Tool), r.String(a.Text)
					emit(a)
				}
			}
			res, err := next.Run(ctx, req)
			if err != nil {
				return Result{}, r.Error(err)
			}
			return RedactResult(r, res), nil
		}}
	}
}

// RedactResult returns res with every string masked by r.
func RedactResult(r *redact.Redactor, res Result) Result {
	if r.Empty() {
		return res
	}
	if res.Output != nil {
		res.Output = r.JSON(res.Output)
	}
	res.Action = r.String(res.Action)
	res.Reasoning = r.String(res.Reasoning)
	if res.Metadata != nil {
		md := make(map[string]any, len(res.Metadata))
		for k, v := range res.Metadata {
			md[r.String(k)] = redactValue(r, v)
		}
		res.Metadata = md
	}
	return res
}

// redactValue masks the strings of a metadata value. Strings, maps and
// slices of them are walked; any other value whose JSON holds a secret is
// replaced by its redacted JSON.
func redactValue(r *redact.Redactor, v any) any {
	switch v := v.(type) {
	case nil, bool, int, int64, float64:
		return v
	case string:
		return r.String(v)
	case error:
		return r.String(v.Error())
	case []string:
		out := make([]string, len(v))
		for i, s := range v {
			out[i] = r.String(s)
		}
		return out
	case []any:
		out := make([]any, len(v))
		for i, e := range v {
			out[i] = redactValue(r, e)
		}
		return out
	case map[string]any:
		out := make(map[string]any, len(v))
		for k, e := range v {
			out[r.String(k)] = redactValue(r, e)
		}
		return out
	case map[string]string:
		out := make(map[string]string, len(v))
		for k, e := range v {
			out[r.String(k)] = r.String(e)
		}
		return out
	}
	b, err := json.Marshal(v)
	if err != nil {
		return v
	}
	if red := r.JSON(b); string(red) != string(b) {
		return json.RawMessage(red)
	}
	return v
}

// Close closes every runner of the set that holds resources (an
// io.Closer, such as the openai runner's connections) and returns their
// errors joined. A runner used for several roles is closed once per role,
// so its Close must be idempotent.
func (s Set) Close() error {
	var errs []error
	for _, r := range []Runner{s.Planner, s.Implementer, s.Judge} {
		if c, ok := r.(io.Closer); ok {
			errs = append(errs, c.Close())
		}
	}
	return errors.Join(errs...)
}
