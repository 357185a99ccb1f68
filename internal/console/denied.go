package console

import (
	"context"
	"errors"
	"net/http"
	"regexp"
	"strings"
	"sync"

	"github.com/nats-io/nats.go"
)

// maxDenials is how many refused subjects the console remembers.
const maxDenials = 32

// deniedRe reads the subject of a refused publish from the server's error.
var deniedRe = regexp.MustCompile(`Publish to "([^"\s]{1,512})"`)

// denials keeps the publishes the NATS server refused the console's
// connection: a refused publish gets no reply, only an asynchronous
// permissions violation, so an action waits for either.
type denials struct {
	mu   sync.Mutex
	n    uint64             // denials so far
	last [maxDenials]string // the subjects of the last ones, by n % maxDenials
	wake chan struct{}      // closed at the next denial
}

func newDenials() *denials { return &denials{wake: make(chan struct{})} }

// watch makes d hear nc's permission violations, passing every async
// error on to the handler nc had.
func (d *denials) watch(nc *nats.Conn) {
	if nc == nil {
		return
	}
	prev := nc.Opts.AsyncErrorCB
	nc.SetErrorHandler(func(c *nats.Conn, sub *nats.Subscription, err error) {
		if errors.Is(err, nats.ErrPermissionViolation) {
			if m := deniedRe.FindStringSubmatch(err.Error()); m != nil {
				d.add(m[1])
			}
		}
		if prev != nil {
			prev(c, sub, err)
		}
	})
}

func (d *denials) add(subject string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.last[d.n%maxDenials] = subject
	d.n++
	close(d.wake)
	d.wake = make(chan struct{})
}

// mark is the count of denials so far, for after.
func (d *denials) mark() uint64 {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.n
}

// after returns the subjects refused since mark that ours selects (of the
// last maxDenials), and a channel closed at the next denial.
func (d *denials) after(mark uint64, ours func(string) bool) ([]string, <-chan struct{}) {
	d.mu.Lock()
	defer d.mu.Unlock()
	var out []string
	for i := max(mark, d.n-min(d.n, maxDenials)); i < d.n; i++ {
		if s := d.last[i%maxDenials]; ours(s) {
			out = append(out, s)
		}
	}
	return out, d.wake
}

// guarded runs call, ending it as soon as the server refuses a publish
// that ours selects: the action then fails with a 403 that says what this
// console's NATS user may not do, instead of a timeout.
func (s *Server) guarded(ctx context.Context, what string, ours func(string) bool, call func(context.Context) error) error {
	mark := s.denied.mark()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- call(ctx) }()
	for {
		refused, wake := s.denied.after(mark, ours)
		if len(refused) > 0 {
			cancel()
			err := <-done
			_ = err // the cancel's error: the denial is the answer
			return errDenied(what, refused)
		}
		select {
		case err := <-done:
			if refused, _ := s.denied.after(mark, ours); err != nil && len(refused) > 0 {
				return errDenied(what, refused)
			}
			return err
		case <-wake:
		}
	}
}

// errDenied is the answer to an action the console's NATS user may not take.
func errDenied(what string, refused []string) error {
	return errStatus(http.StatusForbidden, "this console's NATS user may not %s: the NATS server refused its publish to %s. "+
		"A console connected with the investigator profile is read-only; connect it as a user with the console profile "+
		"(see docs/security.md) to take actions.", what, strings.Join(refused, ", "))
}
