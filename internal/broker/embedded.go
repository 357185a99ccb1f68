package broker

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// Defaults of EmbeddedConfig.
const (
	DefaultListen  = "127.0.0.1:4222"
	DefaultDataDir = "./.drover"
)

// readyTimeout bounds how long StartEmbedded waits for the server to accept
// connections.
const readyTimeout = 10 * time.Second

// EmbeddedConfig configures an in-process NATS server with JetStream.
type EmbeddedConfig struct {
	// Listen is the client address, host:port (default "127.0.0.1:4222",
	// or the ConfigFile's listen). Port 0 picks a free port; ClientURL
	// reports it.
	Listen string
	// DataDir is the JetStream store directory (default "./.drover").
	DataDir string
	// Sync is the fsync interval. 0 fsyncs before every acknowledgement
	// (sync_interval: always); a longer interval is faster but a machine
	// crash can lose acknowledged messages written within it.
	Sync time.Duration
	// ServerName names the server; optional alone, required and unique
	// within a cluster.
	ServerName string
	// Cluster joins the server to a NATS cluster; the zero value runs it
	// alone.
	Cluster ClusterConfig
	// Auth is what clients must present to log in (default: nothing).
	Auth ServerAuth
	// ConfigFile is a nats-server configuration file, read with the
	// server's own parser (accounts, users and permissions, TLS, limits).
	// The file's listen applies unless Listen is set; a file without one
	// listens on 127.0.0.1:4222. JetStream is always on; the file's
	// store_dir and sync_interval win over DataDir and Sync, and its
	// server_name over ServerName. Auth and Cluster must then be left
	// zero: the file configures both.
	ConfigFile string
	// LameDuck and LameDuckGrace shape LameDuck: the server waits the
	// grace, then closes its clients spread over LameDuck, so they
	// reconnect to the other nodes a few at a time (defaults: the
	// server's, 2m and 10s).
	LameDuck, LameDuckGrace time.Duration
	// Logger receives the server's log, notices at debug level; nil
	// discards it. A server that is reachable from other machines and
	// lets anyone in is logged as a warning here.
	Logger *slog.Logger
}

// Embedded is a running in-process NATS server with JetStream.
type Embedded struct {
	srv *server.Server
}

// StartEmbedded starts a NATS server with JetStream in this process and
// waits until it accepts connections. It fails with an error naming the
// listen address if the server cannot listen there or does not become ready
// within 10 seconds.
func StartEmbedded(cfg EmbeddedConfig) (*Embedded, error) {
	opts, err := cfg.serverOptions()
	if err != nil {
		return nil, err
	}
	logs := &serverLog{log: cfg.Logger}
	srv, err := server.NewServer(opts)
	if err != nil {
		return nil, fmt.Errorf("embedded nats on %s: %w", cfg.Listen, err)
	}
	srv.SetLoggerV2(logs, false, false, false)
	if msg := exposureWarning(opts); msg != "" && cfg.Logger != nil {
		cfg.Logger.Warn(msg)
	}
	// Start returns once the client listener is open or has failed.
	srv.Start()
	if msg := logs.firstFatal(); msg != "" {
		stop(srv)
		return nil, fmt.Errorf("embedded nats on %s: %s", cfg.Listen, msg)
	}
	if !srv.ReadyForConnections(readyTimeout) {
		stop(srv)
		return nil, fmt.Errorf("embedded nats on %s: not ready for connections after %s", cfg.Listen, readyTimeout)
	}
	return &Embedded{srv: srv}, nil
}

// serverOptions fills in defaults and translates cfg to server options.
func (cfg *EmbeddedConfig) serverOptions() (*server.Options, error) {
	if cfg.ConfigFile != "" {
		return cfg.fileOptions()
	}
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir
	}
	if cfg.Sync < 0 {
		return nil, fmt.Errorf("embedded nats: sync interval %s is negative", cfg.Sync)
	}
	if err := cfg.Auth.validate(); err != nil {
		return nil, err
	}
	host, port, err := listenHostPort(cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: listen address %q: %w", cfg.Listen, err)
	}
	opts := &server.Options{
		ServerName: cfg.ServerName,
		Host:       host,
		Port:       port,
		JetStream:  true,
		StoreDir:   cfg.DataDir,
		NoSigs:     true,
		NoLog:      true,
	}
	if cfg.Sync == 0 {
		opts.SyncAlways = true
	} else {
		opts.SyncInterval = cfg.Sync
	}
	cfg.Auth.apply(opts)
	if err := cfg.Cluster.apply(opts, cfg.ServerName); err != nil {
		return nil, err
	}
	cfg.applyLameDuck(opts)
	return opts, nil
}

// fileOptions reads cfg.ConfigFile with nats-server's parser and fills in
// what the file leaves out.
func (cfg *EmbeddedConfig) fileOptions() (*server.Options, error) {
	if !cfg.Auth.IsZero() {
		return nil, fmt.Errorf("%w: a configuration file and credentials: set the users in %s", ErrServerAuth, cfg.ConfigFile)
	}
	if cfg.Cluster.Listen != "" || cfg.Cluster.Name != "" || len(cfg.Cluster.Routes) > 0 {
		return nil, fmt.Errorf("embedded nats: a configuration file and cluster settings: set the cluster in %s", cfg.ConfigFile)
	}
	if cfg.Sync < 0 {
		return nil, fmt.Errorf("embedded nats: sync interval %s is negative", cfg.Sync)
	}
	opts, err := server.ProcessConfigFile(cfg.ConfigFile)
	if err != nil {
		return nil, fmt.Errorf("embedded nats: %w", err)
	}
	if cfg.Listen != "" {
		if opts.Host, opts.Port, err = listenHostPort(cfg.Listen); err != nil {
			return nil, fmt.Errorf("embedded nats: listen address %q: %w", cfg.Listen, err)
		}
	}
	if opts.Host == "" {
		opts.Host = "127.0.0.1"
	}
	if opts.Port == 0 {
		opts.Port = server.DEFAULT_PORT
	}
	cfg.Listen = net.JoinHostPort(opts.Host, strconv.Itoa(opts.Port))
	if opts.ServerName == "" {
		opts.ServerName = cfg.ServerName
	}
	opts.JetStream = true
	if opts.StoreDir == "" {
		opts.StoreDir = cfg.DataDir
		if opts.StoreDir == "" {
			opts.StoreDir = DefaultDataDir
		}
	}
	if !opts.SyncAlways && opts.SyncInterval == 0 {
		if cfg.Sync == 0 {
			opts.SyncAlways = true
		} else {
			opts.SyncInterval = cfg.Sync
		}
	}
	opts.NoSigs, opts.NoLog = true, true
	cfg.applyLameDuck(opts)
	return opts, nil
}

// applyLameDuck sets the lame duck durations cfg gives.
func (cfg *EmbeddedConfig) applyLameDuck(opts *server.Options) {
	if cfg.LameDuck > 0 {
		opts.LameDuckDuration = cfg.LameDuck
	}
	if cfg.LameDuckGrace > 0 {
		opts.LameDuckGracePeriod = cfg.LameDuckGrace
	}
}

// ClientURL is the URL clients connect to, with the actual port.
func (e *Embedded) ClientURL() string { return e.srv.ClientURL() }

// InProcess is the connection option that reaches this server inside the
// process, without the network; the URL given to Connect is then ignored.
func (e *Embedded) InProcess() nats.Option { return nats.InProcessServer(e.srv) }

// LameDuck stops the server gently, for a rolling restart: it stops
// accepting clients, tells its clients it is going away (they reconnect to
// other nodes), hands the leadership of its JetStream assets to other
// nodes, waits the grace, closes its clients spread over the lame duck
// duration, then shuts down. It returns once the server has stopped.
func (e *Embedded) LameDuck() {
	e.srv.LameDuckShutdown()
	e.srv.WaitForShutdown()
}

// Shutdown stops the server and waits until it has stopped.
func (e *Embedded) Shutdown() { stop(e.srv) }

func stop(srv *server.Server) {
	srv.Shutdown()
	srv.WaitForShutdown()
}

// ParseSync reads a --sync value: "always" (fsync before every ack, 0) or a
// positive duration such as "2m", nats-server's default interval.
func ParseSync(s string) (time.Duration, error) {
	if s == "always" {
		return 0, nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return 0, fmt.Errorf(`%q: want "always" or a positive duration such as 2m`, s)
	}
	return d, nil
}
