package ops

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"

	"github.com/droverhq/drover/internal/redact"
)

// Limits of the ops server. A client that sends its request slowly, or
// reads the answer slowly, or keeps an idle connection open, is cut off
// rather than holding a goroutine and a socket for good.
const (
	// ReadHeaderTimeout bounds reading a request's headers.
	ReadHeaderTimeout = 5 * time.Second
	// ReadTimeout bounds reading a whole request (the probes and /metrics
	// have no body).
	ReadTimeout = 10 * time.Second
	// WriteTimeout bounds answering one request, from the end of its
	// headers: long enough for a /metrics scrape of a busy worker, whose
	// scraper usually gives up after 10s.
	WriteTimeout = 30 * time.Second
	// IdleTimeout closes a keep-alive connection with no request.
	IdleTimeout = 60 * time.Second
	// MaxHeaderBytes bounds a request's headers; larger ones are answered
	// 431.
	MaxHeaderBytes = 8 << 10
	// maxReasonBytes bounds the reason in a /readyz body.
	maxReasonBytes = 200
)

// Probe reports liveness or readiness: nil when ok, else why not.
// worker.Worker's CheckLive and CheckReady are the probes of a worker.
//
// A failing /readyz answers 503 "not ready: <reason>", where the reason is
// the probe's own words: its error's text without the text of an error it
// wraps (fmt.Errorf's %w), on one line, at most 200 bytes. Wrapped errors
// (a connection's, a server's) can carry addresses and paths, so they are
// logged, never served. A failing /livez answers 503 "not live" and logs
// the whole error.
type Probe func() error

// Server serves /livez, /readyz and /metrics.
type Server struct {
	srv *http.Server
	ln  net.Listener
}

// Option configures Listen.
type Option func(*options)

type options struct {
	log    *slog.Logger
	mounts map[string]http.Handler
	notes  func() []string
}

// WithReadyNotes adds the readiness checks that pass with a warning to the
// /readyz body, one "warning: <note>" line each after its first line
// (such as the worker's ReadyNotes: the sandbox, when it is off). They
// change neither the status code nor the first line.
func WithReadyNotes(notes func() []string) Option {
	return func(o *options) { o.notes = notes }
}

// WithHandler serves h under pattern (an http.ServeMux pattern such as
// "/console/") next to the probes and /metrics.
func WithHandler(pattern string, h http.Handler) Option {
	return func(o *options) {
		if o.mounts == nil {
			o.mounts = map[string]http.Handler{}
		}
		o.mounts[pattern] = h
	}
}

// WithLog sets the logger of probe failures and /metrics errors (default
// slog.Default()).
func WithLog(log *slog.Logger) Option {
	return func(o *options) {
		if log != nil {
			o.log = log
		}
	}
}

// Listen binds addr and returns a server that answers /livez with live,
// /readyz with ready (a nil probe always answers ok), and /metrics from reg.
func Listen(addr string, live, ready Probe, reg prometheus.Gatherer, opts ...Option) (*Server, error) {
	o := options{log: slog.Default()}
	for _, opt := range opts {
		opt(&o)
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("--http %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /livez", probeHandler("live", live, o.log, nil))
	mux.HandleFunc("GET /readyz", probeHandler("ready", ready, o.log, o.notes))
	mux.Handle("GET /metrics", promhttp.HandlerFor(quietGatherer{reg, o.log}, promhttp.HandlerOpts{
		ErrorLog: promLog{o.log}, ErrorHandling: promhttp.HTTPErrorOnError,
	}))
	for pattern, h := range o.mounts {
		mux.Handle(pattern, h)
	}
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: ReadHeaderTimeout,
		ReadTimeout:       ReadTimeout,
		WriteTimeout:      WriteTimeout,
		IdleTimeout:       IdleTimeout,
		MaxHeaderBytes:    MaxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(o.log.Handler(), slog.LevelWarn),
	}
	return &Server{srv: srv, ln: ln}, nil
}

// probeHandler answers 200 "ok" or 503 with the probe's public reason. A
// failure is logged when its text differs from the last one logged, so a
// prober polling a stuck worker does not flood the log.
func probeHandler(name string, p Probe, log *slog.Logger, notes func() []string) http.HandlerFunc {
	var (
		mu   sync.Mutex
		last string
	)
	warnings := func() string {
		if notes == nil {
			return ""
		}
		var b strings.Builder
		for _, n := range notes() {
			b.WriteString("warning: " + redact.OneLine(n) + "\n")
		}
		return b.String()
	}
	return func(w http.ResponseWriter, _ *http.Request) {
		if p == nil {
			_, _ = w.Write([]byte("ok\n" + warnings()))
			return
		}
		err := p()
		if err == nil {
			mu.Lock()
			last = ""
			mu.Unlock()
			_, _ = w.Write([]byte("ok\n" + warnings()))
			return
		}
		mu.Lock()
		if msg := err.Error(); msg != last {
			last = msg
			log.Warn("ops: not "+name, "err", msg)
		}
		mu.Unlock()
		body := "not " + name
		if name == "ready" {
			body += ": " + Reason(err)
		}
		if ws := warnings(); ws != "" {
			body += "\n" + strings.TrimSuffix(ws, "\n")
		}
		http.Error(w, body, http.StatusServiceUnavailable)
	}
}

// Reason is the public part of a probe's error: its text without the text
// of the error it wraps, cut at the first line break and to 200 bytes.
func Reason(err error) string {
	msg := err.Error()
	if inner := errors.Unwrap(err); inner != nil {
		if own, ok := strings.CutSuffix(msg, inner.Error()); ok {
			msg = strings.TrimRight(own, ": ")
		}
	}
	if i := strings.IndexAny(msg, "\r\n"); i >= 0 {
		msg = msg[:i]
	}
	if len(msg) > maxReasonBytes {
		msg = redact.Cut(msg, maxReasonBytes) + "..."
	}
	if msg == "" {
		return "unknown"
	}
	return msg
}

// errGather is what a failed /metrics gathering serves; the cause is
// logged.
var errGather = errors.New("metrics could not be gathered; see the worker's log")

// quietGatherer logs a gathering error and hands promhttp a generic one,
// which is all a scraper sees in the 500's body.
type quietGatherer struct {
	reg prometheus.Gatherer
	log *slog.Logger
}

func (g quietGatherer) Gather() ([]*dto.MetricFamily, error) {
	mfs, err := g.reg.Gather()
	if err != nil {
		g.log.Warn("ops: gathering metrics", "err", err)
		return mfs, errGather
	}
	return mfs, nil
}

// promLog is promhttp's error log on slog.
type promLog struct{ l *slog.Logger }

func (l promLog) Println(v ...any) { l.l.Warn("ops: serving metrics", "err", fmt.Sprint(v...)) }

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
