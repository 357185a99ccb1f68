// Package console is Drover's web console: server-rendered HTML pages of the
// fleet, the workflows, each workflow's board, each task's timeline and diff,
// the audit stream and the dead letters, updated live in the browser.
//
// The console reads what the CLI reads (the state bucket, the audit and DLQ
// streams, the workers' status endpoints) and keeps two watches open: a KV
// watch of the state bucket, mirrored in memory so that a page of a
// 10,000-task workflow renders without reading the bucket, and an ordered
// consumer of the audit stream. Their changes fan out to the browsers as
// Server-Sent Events, batched every 100ms; nothing polls NATS.
//
// Every asset is embedded; every page is an html/template, so every
// untrusted string (scopes, agent outputs, diffs, errors) is escaped. A
// request whose Host the console does not serve is refused before any
// route sees it (host.go), so a page whose DNS name is rebound to the
// console's address gets nothing. The actions (pause, resume, cancel,
// redrive, and creating a task or submitting a board: create.go) are
// POSTs of the console's own origin with a CSRF token, confirmed on a
// page of their own for cancel and redrive.
package console

import (
	"context"
	"crypto/rand"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/audit"
	"github.com/droverhq/drover/internal/status"
	"github.com/droverhq/drover/internal/streamread"
	"github.com/droverhq/drover/subjects"
)

//go:embed templates/*.html
var templateFS embed.FS

//go:embed static
var staticFS embed.FS

// Deps are what a console works with.
type Deps struct {
	// NC carries the control requests and watches the permission errors.
	NC *nats.Conn
	// JS reads the state bucket and the audit, live and dead-letter
	// streams.
	JS jetstream.JetStream
	// Names names the deployment; required.
	Names subjects.Names
	// Log is the console's logger; nil means slog.Default().
	Log *slog.Logger
}

// Config configures a console.
type Config struct {
	// Auth checks every request; its zero value lets anyone in.
	Auth Auth
	// Base is the path the console is mounted under, "" for the root or
	// e.g. "/console" on a worker's --http listener.
	Base string
	// ControlTimeout bounds a control request (default 30s).
	ControlTimeout time.Duration
	// AllowedHosts are the Host values served besides the loopback names
	// with the listener's port (see host.go): "name" for any port or
	// "name:port". Empty: loopback only.
	AllowedHosts []string
	// MaxEventStreams bounds the live event streams at once (default 64);
	// one more is answered 503 with Retry-After.
	MaxEventStreams int
	// EventWriteTimeout bounds each write of an event stream (default
	// 10s); a browser that does not read within it is dropped.
	EventWriteTimeout time.Duration
	// AdmissionWait bounds how long creating a task waits for a worker to
	// accept or refuse it (default 5s); past it the page says the task is
	// queued.
	AdmissionWait time.Duration
}

// Defaults of Config.
const (
	DefaultMaxEventStreams   = 64
	DefaultEventWriteTimeout = 10 * time.Second
	DefaultAdmissionWait     = 5 * time.Second
)

// Server serves the console. Run feeds it; Handler serves it.
type Server struct {
	nc      *nats.Conn
	js      jetstream.JetStream
	names   subjects.Names
	auth    Auth
	hosts   []hostRule
	base    string
	log     *slog.Logger
	ctlWait time.Duration
	key     [32]byte
	pages   map[string]*template.Template
	mirror  *mirror
	hub     *hub
	fleet   *fleet
	kvMu    sync.Mutex
	kv      jetstream.KeyValue
	mux     *http.ServeMux
	routes  []string      // the mux's patterns, in registration order
	streams chan struct{} // a slot per live event stream
	sseWait time.Duration
	stopped chan struct{}
	denied  *denials
	admWait time.Duration
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.ControlTimeout <= 0 {
		c.ControlTimeout = 30 * time.Second
	}
	if c.MaxEventStreams <= 0 {
		c.MaxEventStreams = DefaultMaxEventStreams
	}
	if c.EventWriteTimeout <= 0 {
		c.EventWriteTimeout = DefaultEventWriteTimeout
	}
	if c.AdmissionWait <= 0 {
		c.AdmissionWait = DefaultAdmissionWait
	}
	return c
}

// validate names the first setting that cannot work.
func (c Config) validate() error {
	if err := c.Auth.Validate(); err != nil {
		return err
	}
	if c.Base != "" && (!strings.HasPrefix(c.Base, "/") || strings.HasSuffix(c.Base, "/")) {
		return fmt.Errorf("console: base path %q must start and not end with /", c.Base)
	}
	return nil
}

// New returns a console; it serves once Run has loaded the state bucket.
func New(deps Deps, cfg Config) (*Server, error) {
	if deps.Names.Prefix() == "" {
		return nil, errors.New("console: Deps.Names is required")
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	log := deps.Log
	if log == nil {
		log = slog.Default()
	}
	var hosts []hostRule
	for _, v := range cfg.AllowedHosts {
		h, err := parseAllowedHost(v)
		if err != nil {
			return nil, fmt.Errorf("AllowedHosts: %w", err)
		}
		hosts = append(hosts, h)
	}
	s := &Server{nc: deps.NC, js: deps.JS, names: deps.Names, auth: cfg.Auth, hosts: hosts, base: cfg.Base, log: log,
		ctlWait: cfg.ControlTimeout, mirror: newMirror(), hub: newHub(), fleet: newFleet(), stopped: make(chan struct{}), denied: newDenials(),
		streams: make(chan struct{}, cfg.MaxEventStreams), sseWait: cfg.EventWriteTimeout, admWait: cfg.AdmissionWait}
	s.denied.watch(deps.NC)
	if _, err := rand.Read(s.key[:]); err != nil {
		return nil, err
	}
	pages, err := parsePages(s.funcs())
	if err != nil {
		return nil, err
	}
	s.pages = pages
	s.register()
	return s, nil
}

// Handler serves the console: every route under Config.Base, each behind
// the Host check and then the guard (headers, auth, session).
func (s *Server) Handler() http.Handler { return s.checkHost(s.guard(s.mux)) }

// Routes returns the patterns the console serves ("GET /workflows/{wf}"),
// so that a test can check each of them.
func (s *Server) Routes() []string { return append([]string(nil), s.routes...) }

// handle registers a route; every route goes through it, so Routes lists
// them all.
func (s *Server) handle(pattern string, h http.Handler) {
	s.mux.Handle(pattern, h)
	s.routes = append(s.routes, pattern)
}

func (s *Server) register() {
	s.mux = http.NewServeMux()
	static, _ := fs.Sub(staticFS, "static")
	fileServer := http.StripPrefix(s.base+"/static/", http.FileServerFS(static))
	s.handle("GET "+s.base+"/static/", http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "max-age=3600")
		fileServer.ServeHTTP(w, r)
	}))
	s.handle("GET "+s.base+"/{$}", s.page(s.fleetPage))
	s.handle("GET "+s.base+"/workflows", s.page(s.workflowsPage))
	s.handle("GET "+s.base+"/workflows/{wf}", s.page(s.boardPage))
	s.handle("POST "+s.base+"/workflows/{wf}/{action}", s.page(s.controlAction))
	s.handle("GET "+s.base+"/tasks/{wf}/{task}", s.page(s.taskPage))
	s.handle("GET "+s.base+"/tasks/{wf}/{task}/live", http.HandlerFunc(s.liveEvents))
	s.handle("GET "+s.base+"/audit", s.page(s.auditPage))
	s.handle("GET "+s.base+"/dlq", s.page(s.dlqPage))
	s.handle("GET "+s.base+"/dlq/{seq}", s.page(s.dlqEntryPage))
	s.handle("POST "+s.base+"/dlq/{seq}/redrive", s.page(s.redriveAction))
	s.handle("GET "+s.base+"/reviews", s.page(s.reviewsPage))
	s.handle("POST "+s.base+"/reviews/{wf}/{task}/{decision}", s.page(s.reviewAction))
	s.handle("GET "+s.base+"/events", http.HandlerFunc(s.events))
	s.handle("GET "+s.base+"/new", s.page(s.newPage))
	s.handle("POST "+s.base+"/new/task", s.page(s.createTask))
	s.handle("POST "+s.base+"/new/board", s.page(s.submitBoard))
}

// Run keeps the watches open and the hub flushing until ctx ends. It
// returns an error only when a watch cannot start.
// When Run returns, the open event streams end, so that a server's graceful
// shutdown does not wait for them.
func (s *Server) Run(ctx context.Context) error {
	defer close(s.stopped)
	var (
		kv   jetstream.KeyValue
		cons jetstream.Consumer
	)
	// A console may start before any worker provisioned the bucket and the
	// stream: it waits for them.
	err := retry(ctx, func() (err error) {
		kv, err = s.js.KeyValue(ctx, s.names.StateBucket())
		if err != nil {
			return fmt.Errorf("console: state bucket %s: %w", s.names.StateBucket(), err)
		}
		cons, err = streamread.OrderedConsumer(ctx, s.js, s.names.AuditStream(), jetstream.OrderedConsumerConfig{
			DeliverPolicy: jetstream.DeliverNewPolicy})
		if err != nil {
			return fmt.Errorf("console: audit stream %s: %w", s.names.AuditStream(), err)
		}
		return nil
	}, func(err error) bool {
		return errors.Is(err, jetstream.ErrBucketNotFound) || errors.Is(err, jetstream.ErrStreamNotFound)
	}, s.log)
	if err != nil || ctx.Err() != nil {
		return err
	}
	s.kvMu.Lock()
	s.kv = kv
	s.kvMu.Unlock()
	var wg sync.WaitGroup
	defer wg.Wait()
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wg.Add(5)
	go func() { defer wg.Done(); s.loadNotes(ctx) }()
	go func() {
		defer wg.Done()
		// A watch that ends (its connection's trouble) starts again and
		// applies the bucket's current values again (a key deleted in
		// between stays until the console restarts); every page reloads.
		for ctx.Err() == nil {
			if err := s.mirror.watch(ctx, kv, s.hub.push); err != nil {
				s.log.Warn("console: state watch", "err", err)
			}
			select {
			case <-ctx.Done():
			case <-time.After(time.Second):
				s.hub.dropAll()
			}
		}
	}()
	go func() { defer wg.Done(); s.followAudit(ctx, cons) }()
	go func() { defer wg.Done(); s.fleet.run(ctx, s.collectFleet, s.hub.push) }()
	go func() {
		defer wg.Done()
		t := time.NewTicker(flushEvery)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.hub.flush()
			}
		}
	}()
	<-ctx.Done()
	return nil
}

// Ready is closed once the state bucket's current values are loaded.
func (s *Server) Ready() <-chan struct{} { return s.mirror.ready }

// maxEventText bounds the text of an audit event pushed to the browsers.
const maxEventText = 300

// followAudit pushes each new audit event to the hub and counts the
// finished tasks for the throughput sparkline.
func (s *Server) followAudit(ctx context.Context, cons jetstream.Consumer) {
	defer streamread.DeleteConsumer(context.WithoutCancel(ctx), streamread.StreamOf(s.js, s.names.AuditStream()), cons)
	it, err := cons.Messages()
	if err != nil {
		s.log.Warn("console: audit follow", "err", err)
		return
	}
	go func() { <-ctx.Done(); it.Stop() }()
	for {
		msg, err := it.Next()
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, jetstream.ErrMsgIteratorClosed) {
				s.log.Warn("console: audit follow", "err", err)
			}
			return
		}
		md, err := msg.Metadata()
		if err != nil {
			continue
		}
		row := rowOf(audit.Record{Seq: md.Sequence.Stream, Time: md.Timestamp, Data: msg.Data()})
		s.hub.pushAudit(row.Seq, row.item())
		s.noteEvent(md.Sequence.Stream, msg.Subject(), msg.Data())
		s.fleet.event(row.Type)
	}
}

// collectFleet takes one fleet snapshot.
func (s *Server) collectFleet(ctx context.Context) (status.Report, error) {
	col, err := status.NewCollector(status.Deps{NC: s.nc, JS: s.js, Names: s.names}, status.Config{})
	if err != nil {
		return status.Report{}, err
	}
	return col.Collect(ctx)
}

// stateKV returns the state bucket once Run opened it.
func (s *Server) stateKV() jetstream.KeyValue {
	s.kvMu.Lock()
	defer s.kvMu.Unlock()
	return s.kv
}

// retry calls f until it succeeds, fails with an error wait does not
// accept, or ctx ends; it waits a second between calls.
func retry(ctx context.Context, f func() error, wait func(error) bool, log *slog.Logger) error {
	logged := false
	for {
		err := f()
		if err == nil || !wait(err) {
			return err
		}
		if !logged {
			log.Info("console: waiting for a worker to provision JetStream", "err", err)
			logged = true
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(time.Second):
		}
	}
}
