package ops

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Probe reports liveness or readiness: nil when ok, else why not (the
// reason is the body of the 503). worker.Worker's CheckLive and CheckReady
// are the probes of a worker.
type Probe func() error

// Server serves /livez, /readyz and /metrics.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Listen binds addr and returns a server that answers /livez with live,
// /readyz with ready (a nil probe always answers ok), and /metrics from reg.
func Listen(addr string, live, ready Probe, reg prometheus.Gatherer) (*Server, error) {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", probeHandler(live))
	mux.HandleFunc("GET /readyz", probeHandler(ready))
	mux.Handle("GET /metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	return &Server{srv: &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}, ln: ln}, nil
}

func probeHandler(p Probe) http.HandlerFunc {
	return func(w http.ResponseWriter, _ *http.Request) {
		if p == nil {
			_, _ = w.Write([]byte("ok\n"))
			return
		}
		if err := p(); err != nil {
			http.Error(w, "not ok: "+err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = w.Write([]byte("ok\n"))
	}
}

// Addr is the address the server listens on.
func (s *Server) Addr() string { return s.ln.Addr().String() }

// Serve serves until ctx ends, then shuts down within 5s.
func (s *Server) Serve(ctx context.Context) error {
	errc := make(chan error, 1)
	go func() { errc <- s.srv.Serve(s.ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := s.srv.Shutdown(sctx)
	if serr := <-errc; serr != nil && !errors.Is(serr, http.ErrServerClosed) {
		return serr
	}
	return err
}
