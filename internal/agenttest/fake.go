package agenttest

import (
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
)

// fake is what every model API fake shares: its address, its script, and
// what it received and reported.
type fake struct {
	// URL is the fake's base address, on loopback.
	URL    string
	script []Turn

	mu       sync.Mutex
	requests []Request
	in, out  int64
}

// start serves h on loopback until t ends.
func (f *fake) start(t testing.TB, h http.HandlerFunc) {
	t.Helper()
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	f.URL = srv.URL
}

// Requests returns what the fake has received so far.
func (f *fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.requests...)
}

// Totals is the input (cache reads included) and output tokens the fake
// reported in all.
func (f *fake) Totals() (in, out int64) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.in, f.out
}
