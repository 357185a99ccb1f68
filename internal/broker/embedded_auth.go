package broker

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"strings"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go"
)

// ServerAuth is the authentication an embedded server requires of every
// client: a user and password, or a token. The zero value requires none.
// Accounts and per-user permissions need a server configuration file
// (EmbeddedConfig.ConfigFile).
//
// ServerAuth never prints its secrets: String and LogValue say which are
// set, never their values.
type ServerAuth struct {
	// User and Password: clients log in with this user name and password;
	// each needs the other.
	User, Password string
	// Token: clients log in with this token.
	Token string
}

// ErrServerAuth is wrapped by every error about an embedded server's auth.
var ErrServerAuth = errors.New("embedded nats auth")

// IsZero reports whether a requires no authentication.
func (a ServerAuth) IsZero() bool { return a == ServerAuth{} }

func (a ServerAuth) validate() error {
	switch {
	case a.Token != "" && (a.User != "" || a.Password != ""):
		return fmt.Errorf("%w: a user and a token: choose one", ErrServerAuth)
	case a.User != "" && a.Password == "":
		return fmt.Errorf("%w: user %q has no password", ErrServerAuth, a.User)
	case a.Password != "" && a.User == "":
		return fmt.Errorf("%w: a password needs a user", ErrServerAuth)
	}
	return nil
}

func (a ServerAuth) apply(opts *server.Options) {
	opts.Username, opts.Password, opts.Authorization = a.User, a.Password, a.Token
}

// ClientOptions are the connection options that log in to a server
// started with a: nats.UserInfo, nats.Token, or none.
func (a ServerAuth) ClientOptions() []nats.Option {
	switch {
	case a.User != "":
		return []nats.Option{nats.UserInfo(a.User, a.Password)}
	case a.Token != "":
		return []nats.Option{nats.Token(a.Token)}
	}
	return nil
}

// String describes a without its secrets, e.g. "user worker, password set".
func (a ServerAuth) String() string {
	switch {
	case a.User != "":
		return "user " + a.User + ", password set"
	case a.Token != "":
		return "token set"
	}
	return "no auth"
}

// GoString keeps %#v from printing the secrets too.
func (a ServerAuth) GoString() string { return "broker.ServerAuth{" + a.String() + "}" }

// LogValue logs a as String does, so slog never sees the secrets.
func (a ServerAuth) LogValue() slog.Value { return slog.StringValue(a.String()) }

// requiresAuth reports whether the server options make clients log in. A
// no_auth_user lets anyone in as that user, so it counts as no auth.
func requiresAuth(opts *server.Options) bool {
	if opts.NoAuthUser != "" {
		return false
	}
	return opts.Username != "" || opts.Authorization != "" || len(opts.Users) > 0 || len(opts.Nkeys) > 0 ||
		len(opts.TrustedOperators) > 0 || len(opts.TrustedKeys) > 0 || opts.AuthCallout != nil || opts.CustomClientAuthentication != nil ||
		(opts.TLSVerify && opts.TLSMap)
}

// isLoopback reports whether host only accepts connections from this
// machine: localhost or a loopback IP. An empty host is every interface.
func isLoopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(strings.Trim(host, "[]"))
	return ip != nil && ip.IsLoopback()
}

// exposureWarning is the warning for a server whose client port can be
// reached from other machines while letting anyone in, or "".
func exposureWarning(opts *server.Options) string {
	host := opts.Host
	if host == "" {
		host = "0.0.0.0"
	}
	if isLoopback(host) || requiresAuth(opts) {
		return ""
	}
	port := strconv.Itoa(opts.Port)
	if opts.Port <= 0 {
		port = "(random)"
	}
	return fmt.Sprintf("embedded NATS listens on %s without auth: anyone who can reach it can submit tasks that run agents on this host",
		net.JoinHostPort(host, port))
}
