package runner

import (
	"context"
	"fmt"
	"runtime/debug"
	"time"
)

// Inline is implemented by runners that can say whether they do their
// work in the caller's goroutine, in process, and return as soon as their
// context is done, waiting on nothing that ignores it (the sim, a record's
// replay, and middlewares around them).
type Inline interface {
	RunsInline() bool
}

// RunsInline reports whether r says it runs inline.
func RunsInline(r Runner) bool {
	i, ok := r.(Inline)
	return ok && i.RunsInline()
}

// WithTimeout bounds each role call to d. When the deadline passes while
// the parent context is still live, the call returns an error wrapping
// ErrTimeout that names the role and d. The inner runner runs in its own
// goroutine, so WithTimeout returns at the deadline even if the inner
// runner ignores its context; the goroutine ends when the inner runner
// returns, its result dropped into a buffered channel. A panic in the inner
// runner is re-raised in the caller's goroutine, so an outer WithRecover
// still catches it. An Inline runner is called in the caller's goroutine
// instead, bounded by its context alone: a role call then costs no
// goroutine and no hand-off between two (about a tenth of a sim task's
// CPU). d <= 0 means no timeout.
func WithTimeout(d time.Duration) Middleware {
	return func(next Runner) Runner {
		if d <= 0 {
			return next
		}
		if RunsInline(next) {
			return Func{ID: next.Identity(), InCaller: true, F: func(ctx context.Context, req Request) (Result, error) {
				tctx, cancel := context.WithTimeout(ctx, d)
				defer cancel()
				var out callResult
				out.res, out.err = next.Run(tctx, req)
				return out.unwrap(ctx, tctx, req, d)
			}}
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
