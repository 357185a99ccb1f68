package runner

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"
)

// WithTimeout bounds each role call to d. When the deadline passes while
// the parent context is still live, the call returns an error wrapping
// ErrTimeout that names the role and d. The inner runner runs in its own
// goroutine, so WithTimeout returns at the deadline even if the inner
// runner ignores its context; the goroutine ends when the inner runner
// returns, its result dropped into a buffered channel. A panic in the inner
// runner is re-raised in the caller's goroutine, so an outer WithRecover
// still catches it. d <= 0 means no timeout.
func WithTimeout(d time.Duration) Middleware {
	return func(next Runner) Runner {
		if d <= 0 {
			return next
		}
		return Func{ID: next.Identity(), F: func(ctx context.Context, req Request) (Result, error) {
			tctx, cancel := context.WithTimeout(ctx, d)
			defer cancel()
			done := make(chan callResult, 1)
			go func() {
				var out callResult
				defer func() {
					if v := recover(); v != nil {
						out = callResult{panicked: &forwardedPanic{value: v, stack: debug.Stack()}}
					}
					done <- out
				}()
				out.res, out.err = next.Run(tctx, req)
			}()
			select {
			case out := <-done:
				return out.unwrap(ctx, tctx, req, d)
			case <-tctx.Done():
				select {
				case out := <-done: // finished at the deadline: keep its result
					return out.unwrap(ctx, tctx, req, d)
				default:
				}
				if err := ctx.Err(); err != nil {
					return Result{}, fmt.Errorf("%s: %w", req.Role, err)
				}
				return Result{}, timeoutError(req, d)
			}
		}}
	}
}

// callResult is what the inner runner's goroutine hands back.
type callResult struct {
	res      Result
	err      error
	panicked *forwardedPanic
}

func (c callResult) unwrap(parent, tctx context.Context, req Request, d time.Duration) (Result, error) {
	if c.panicked != nil {
		panic(c.panicked)
	}
	if c.err != nil && parent.Err() == nil && tctx.Err() == context.DeadlineExceeded {
		return Result{}, fmt.Errorf("%w: %v", timeoutError(req, d), c.err)
	}
	return c.res, c.err
}

func timeoutError(req Request, d time.Duration) error {
	return fmt.Errorf("%w: %s exceeded %s", ErrTimeout, req.Role, d)
}

// forwardedPanic carries a panic from another goroutine with the stack
// where it happened; WithRecover reports that stack.
type forwardedPanic struct {
	value any
	stack []byte
}

func (p *forwardedPanic) String() string { return fmt.Sprint(p.value) }
