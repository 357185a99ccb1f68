package runner

import (
	"context"
	"fmt"
	"runtime/debug"

	"github.com/droverhq/drover/internal/redact"
)

// maxPanicStack bounds the stack kept in a panic's error.
const maxPanicStack = 2 << 10

// WithRecover turns a panic in the inner runner into an error wrapping
// ErrPanic, with the role, the panic value and the first 2 KiB of the
// stack. Place it outermost (Chain(r, WithRecover(), WithTimeout(d))):
// WithTimeout forwards a panic from its goroutine to the caller's.
func WithRecover() Middleware {
	return func(next Runner) Runner {
		return Func{ID: next.Identity(), InCaller: RunsInline(next), F: func(ctx context.Context, req Request) (res Result, err error) {
			defer func() {
				v := recover()
				if v == nil {
					return
				}
				stack := debug.Stack()
				if fp, ok := v.(*forwardedPanic); ok {
					v, stack = fp.value, fp.stack
				}
				res, err = Result{}, fmt.Errorf("%w: %s: %v\n%s", ErrPanic, req.Role, v, redact.Cut(string(stack), maxPanicStack))
			}()
			return next.Run(ctx, req)
		}}
	}
}
