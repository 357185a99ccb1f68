package console

import (
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
)

// A browser sends the name it resolved in Host. A page whose DNS name the
// attacker rebinds to 127.0.0.1 reaches a loopback console as its own
// origin, reads its pages and CSRF tokens and posts its actions, unless the
// console refuses every Host it does not serve. The console serves:
//
//   - "localhost" and loopback IP literals (127.0.0.0/8, [::1]) with the
//     port of the connection's local address (the port it listens on), or
//     without a port when that is 80 (443 over TLS);
//   - the Config.AllowedHosts (--allowed-host): "name" for any port,
//     "name:port" for that port only.
//
// A name under .localhost is not served unless listed: browsers resolve it
// to loopback themselves, but not every resolver does, and a name that
// reaches DNS can be rebound.

// hostRule is one allowed Host: a lower-case name or IP literal (without
// brackets) and a port, "" for any.
type hostRule struct{ name, port string }

// ErrAllowedHost is the refusal of an allowed host that is not a host name
// or IP literal with an optional port.
var ErrAllowedHost = errors.New("console: an allowed host is a host name or IP address, optionally with :port (IPv6 in brackets)")

// parseAllowedHost parses one Config.AllowedHosts value.
func parseAllowedHost(v string) (hostRule, error) {
	name, port, ok := splitHost(v)
	if !ok || !validName(name) || (port != "" && !validPort(port)) {
		return hostRule{}, fmt.Errorf("%w: %q", ErrAllowedHost, v)
	}
	return hostRule{name: name, port: port}, nil
}

// CheckAllowedHosts checks allowed-host values as New does, for a command
// that wants to refuse them before it connects anything.
func CheckAllowedHosts(hosts []string) error {
	for _, h := range hosts {
		if _, err := parseAllowedHost(h); err != nil {
			return err
		}
	}
	return nil
}

// splitHost splits a Host value into its lower-case name (an IPv6 literal
// without its brackets) and its port ("" when absent).
func splitHost(v string) (name, port string, ok bool) {
	if v == "" || strings.ContainsAny(v, "/@?#\\ \t") {
		return "", "", false
	}
	if strings.HasPrefix(v, "[") {
		end := strings.IndexByte(v, ']')
		if end < 0 {
			return "", "", false
		}
		name, rest := v[1:end], v[end+1:]
		if net.ParseIP(name) == nil || !strings.Contains(name, ":") {
			return "", "", false
		}
		switch {
		case rest == "":
		case len(rest) > 1 && rest[0] == ':':
			port = rest[1:]
		default:
			return "", "", false
		}
		return strings.ToLower(name), port, true
	}
	name, port, found := strings.Cut(v, ":")
	if name == "" || (found && port == "") || strings.Contains(port, ":") {
		return "", "", false // an IPv6 literal needs its brackets
	}
	return strings.ToLower(name), port, true
}

// validName reports whether name is an IP literal or a DNS name of
// letters, digits, dashes and dots.
func validName(name string) bool {
	if net.ParseIP(name) != nil {
		return true
	}
	if len(name) > 253 || strings.HasPrefix(name, ".") || strings.HasSuffix(name, ".") || strings.Contains(name, "..") {
		return false
	}
	for _, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-' || c == '.') {
			return false
		}
	}
	return true
}

func validPort(p string) bool {
	n, err := strconv.Atoi(p)
	return err == nil && n > 0 && n < 65536 && strconv.Itoa(n) == p
}

// isLoopbackName reports whether name is "localhost" or a loopback IP
// literal: names no DNS answer can point elsewhere.
func isLoopbackName(name string) bool {
	if name == "localhost" {
		return true
	}
	ip := net.ParseIP(name)
	return ip != nil && ip.IsLoopback()
}

// hostAllowed reports whether the console serves host (a Host header or an
// Origin's host) on a connection whose local port is localPort ("" when
// unknown: then no loopback name is served).
func (s *Server) hostAllowed(host, localPort string, tls bool) bool {
	name, port, ok := splitHost(host)
	if !ok {
		return false
	}
	if port == "" {
		port = "80"
		if tls {
			port = "443"
		}
	}
	if localPort != "" && port == localPort && isLoopbackName(name) {
		return true
	}
	for _, h := range s.hosts {
		if h.name == name && (h.port == "" || h.port == port) {
			return true
		}
	}
	return false
}

// localPort is the port of the connection's local address: the port the
// console serves this request on.
func localPort(r *http.Request) string {
	a, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	if !ok {
		return ""
	}
	_, p, err := net.SplitHostPort(a.String())
	if err != nil {
		return ""
	}
	return p
}

// misdirected is the body of a refused Host.
const misdirected = "421 misdirected request: this console does not serve that Host (see --allowed-host)\n"

// checkHost refuses a request whose Host the console does not serve with
// 421 Misdirected Request, before any other handler (auth, pages, assets,
// the event stream, actions) sees it.
func (s *Server) checkHost(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if !s.hostAllowed(r.Host, localPort(r), r.TLS != nil) {
			h := w.Header()
			h.Set("Content-Type", "text/plain; charset=utf-8")
			h.Set("X-Content-Type-Options", "nosniff")
			h.Set("Content-Security-Policy", "default-src 'none'")
			h.Set("Cache-Control", "no-store")
			w.WriteHeader(http.StatusMisdirectedRequest)
			_, _ = io.WriteString(w, misdirected)
			return
		}
		next.ServeHTTP(w, r)
	})
}
