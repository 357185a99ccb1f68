package broker

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats-server/v2/server"
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
	// Listen is the client address, host:port (default "127.0.0.1:4222").
	// Port 0 picks a free port; ClientURL reports it.
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
	// Logger receives the server's log, notices at debug level; nil
	// discards it.
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
	if cfg.Listen == "" {
		cfg.Listen = DefaultListen
	}
	if cfg.DataDir == "" {
		cfg.DataDir = DefaultDataDir
	}
	if cfg.Sync < 0 {
		return nil, fmt.Errorf("embedded nats: sync interval %s is negative", cfg.Sync)
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
	if err := cfg.Cluster.apply(opts, cfg.ServerName); err != nil {
		return nil, err
	}
	return opts, nil
}

// ClientURL is the URL clients connect to, with the actual port.
func (e *Embedded) ClientURL() string { return e.srv.ClientURL() }

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
