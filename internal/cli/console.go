package cli

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/droverhq/drover/internal/console"
	"github.com/droverhq/drover/internal/ops"
)

// DefaultConsoleListen is where `drover console` listens by default.
const DefaultConsoleListen = "127.0.0.1:8090"

// ErrConsoleOpen is the refusal of a console on a non-loopback address
// without auth.
var ErrConsoleOpen = errors.New("refusing to serve the console on a non-loopback address without auth")

// ErrConsoleHosts is the refusal of a console on a non-loopback address
// that names no host it serves.
var ErrConsoleHosts = errors.New("refusing to serve the console on a non-loopback address without an allowed host")

// consoleAuthFlags are the console's access flags: the environment
// variables that hold its credentials (secrets never go in a flag), the
// Host values it serves besides the loopback names, and its cap on live
// event streams.
type consoleAuthFlags struct {
	user, passwordEnv, tokenEnv string
	allowedHosts                []string
	maxStreams                  int
}

// add registers the flags, their names prefixed with prefix.
func (f *consoleAuthFlags) add(fl *pflag.FlagSet, prefix string) {
	fl.StringVar(&f.user, prefix+"auth-user", "", "console basic auth user (the password comes from --"+prefix+"auth-password-env)")
	fl.StringVar(&f.passwordEnv, prefix+"auth-password-env", "", "name of the environment variable holding the console's basic auth password")
	fl.StringVar(&f.tokenEnv, prefix+"auth-token-env", "", `name of the environment variable holding the console's bearer token ("Authorization: Bearer ...")`)
	fl.StringSliceVar(&f.allowedHosts, prefix+"allowed-host", nil, "a Host the console serves besides localhost and loopback IPs with its port: name (any port) or name:port; repeat or comma-separate; needed on a non-loopback address")
	fl.IntVar(&f.maxStreams, prefix+"max-event-streams", console.DefaultMaxEventStreams, "live event streams (open console pages) at once; one more is answered 503")
}

// config is the console's configuration from the flags.
func (f consoleAuthFlags) config(prefix string, auth console.Auth) (console.Config, error) {
	if f.maxStreams < 1 {
		return console.Config{}, fmt.Errorf("--%smax-event-streams %d: want at least 1", prefix, f.maxStreams)
	}
	return console.Config{Auth: auth, AllowedHosts: f.allowedHosts, MaxEventStreams: f.maxStreams}, nil
}

// resolve reads the named variables into an Auth.
func (f consoleAuthFlags) resolve(prefix string, lookup func(string) (string, bool)) (console.Auth, error) {
	var a console.Auth
	read := func(flag, name string) (string, error) {
		if name == "" {
			return "", nil
		}
		v, ok := lookup(name)
		if !ok || v == "" {
			return "", fmt.Errorf("--%s%s: environment variable %s is not set", prefix, flag, name)
		}
		return v, nil
	}
	var err error
	if a.Password, err = read("auth-password-env", f.passwordEnv); err != nil {
		return a, err
	}
	if a.Token, err = read("auth-token-env", f.tokenEnv); err != nil {
		return a, err
	}
	a.User = f.user
	if a.Password != "" && a.User == "" {
		return a, fmt.Errorf("--%sauth-password-env needs --%sauth-user", prefix, prefix)
	}
	if a.User != "" && a.Password == "" {
		return a, fmt.Errorf("--%sauth-user needs --%sauth-password-env", prefix, prefix)
	}
	return a, nil
}

// checkConsoleListen checks the allowed hosts, and refuses a non-loopback
// address when auth is off or no allowed host names what the browsers
// will send as Host. An empty host (":8090") is every interface. prefix
// is the flags' ("console-" for serve).
func checkConsoleListen(addr string, auth console.Auth, allowed []string, prefix string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("console address %q: %w", addr, err)
	}
	if err := console.CheckAllowedHosts(allowed); err != nil {
		return fmt.Errorf("--%sallowed-host: %w", prefix, err)
	}
	if isLoopbackHost(host) {
		return nil
	}
	if !auth.Enabled() {
		return fmt.Errorf("%w: %s (set --%[3]sauth-user with --%[3]sauth-password-env, or --%[3]sauth-token-env, or listen on 127.0.0.1)", ErrConsoleOpen, addr, prefix)
	}
	if len(allowed) == 0 {
		return fmt.Errorf("%w: %s (name the host the browsers use, e.g. --%sallowed-host console.example.com)", ErrConsoleHosts, addr, prefix)
	}
	return nil
}

func isLoopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

func newConsoleCmd(g *globals) *cobra.Command {
	var (
		listen string
		auth   consoleAuthFlags
	)
	cmd := &cobra.Command{
		Use:   "console",
		Short: "Serve the web console: fleet, workflows, boards, tasks, audit and dead letters, live",
		Long: `Serve the web console on --listen (default ` + DefaultConsoleListen + `). It connects to NATS like
every client command (--nats-url, --user, --creds, ...), so it sees and does only what that
NATS user may, and follows the state bucket and the audit stream live.

A non-loopback --listen is refused unless auth is on: basic auth (--auth-user and
--auth-password-env naming the variable that holds the password) or a bearer token
(--auth-token-env), and --allowed-host names the host the browsers use.

Every request whose Host is not one the console serves is refused (421) before
anything else answers, so that a web page whose DNS name is rebound to this address
gets nothing: served are localhost and the loopback IPs with the console's port, and
each --allowed-host (name for any port, or name:port; repeatable, or comma-separated
in DROVER_ALLOWED_HOST). Pause, resume, cancel and redrive are POSTs with this
origin's Origin (or Referer) and a CSRF token; each
is recorded in the audit stream with the actor "console:<user>" (a redrive as a
task_redriven event). Connected as a user of the investigator profile the console is
read-only; the console profile of deploy/nats/profiles.conf lets it take its actions.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			a, err := auth.resolve("", os.LookupEnv)
			if err != nil {
				return err
			}
			if err := checkConsoleListen(listen, a, auth.allowedHosts, ""); err != nil {
				return err
			}
			cfg, err := auth.config("", a)
			if err != nil {
				return err
			}
			ctx := cmd.Context()
			cl, err := g.connect(ctx, "console")
			if err != nil {
				return err
			}
			defer cl.Close()
			cs, err := console.New(console.Deps{NC: cl.nc, JS: cl.js, Names: g.names, Log: g.log}, cfg)
			if err != nil {
				return err
			}
			ln, err := net.Listen("tcp", listen)
			if err != nil {
				return fmt.Errorf("--listen %s: %w", listen, err)
			}
			return serveConsole(ctx, g, cs, ln)
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", DefaultConsoleListen, "address of the console")
	auth.add(fl, "")
	return cmd
}

// serveConsole runs the console's watches and its HTTP server on ln until
// ctx ends.
func serveConsole(ctx context.Context, g *globals, cs *console.Server, ln net.Listener) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	runErr := make(chan error, 1)
	go func() { runErr <- cs.Run(ctx) }()
	srv := &http.Server{
		Handler:           cs.Handler(),
		ReadHeaderTimeout: ops.ReadHeaderTimeout,
		ReadTimeout:       ops.ReadTimeout,
		WriteTimeout:      ops.WriteTimeout,
		IdleTimeout:       ops.IdleTimeout,
		MaxHeaderBytes:    ops.MaxHeaderBytes,
		BaseContext:       func(net.Listener) context.Context { return ctx },
	}
	srvErr := make(chan error, 1)
	go func() { srvErr <- srv.Serve(ln) }()
	g.log.Info("console", "url", "http://"+ln.Addr().String()+"/")
	var err error
	select {
	case <-ctx.Done():
	case err = <-runErr:
	case err = <-srvErr:
	}
	cancel()
	sctx, scancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer scancel()
	_ = srv.Shutdown(sctx)
	if err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// checkConsole checks serve's console flags before anything starts.
func (f *serveFlags) checkConsole() error {
	if !f.console || f.httpAddr == "" {
		return nil
	}
	a, err := f.consoleAuth.resolve("console-", os.LookupEnv)
	if err != nil {
		return err
	}
	if err := checkConsoleListen(f.httpAddr, a, f.consoleAuth.allowedHosts, "console-"); err != nil {
		return fmt.Errorf("--console on --http: %w", err)
	}
	_, err = f.consoleAuth.config("console-", a)
	return err
}

// mountConsole starts a console on the worker's connection, run until ctx
// ends, and returns the option that serves it under /console/ on the
// worker's --http listener.
func mountConsole(ctx context.Context, g *globals, nc *nats.Conn, httpAddr string, auth consoleAuthFlags, done func()) (ops.Option, error) {
	a, err := auth.resolve("console-", os.LookupEnv)
	if err != nil {
		return nil, err
	}
	if err := checkConsoleListen(httpAddr, a, auth.allowedHosts, "console-"); err != nil {
		return nil, fmt.Errorf("--console on --http: %w", err)
	}
	cfg, err := auth.config("console-", a)
	if err != nil {
		return nil, err
	}
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	cfg.Base = "/console"
	cs, err := console.New(console.Deps{NC: nc, JS: js, Names: g.names, Log: g.log}, cfg)
	if err != nil {
		return nil, err
	}
	go func() {
		defer done()
		if err := cs.Run(ctx); err != nil {
			g.log.Warn("console", "err", err)
		}
	}()
	return ops.WithHandler("/console/", cs.Handler()), nil
}
