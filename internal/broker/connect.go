package broker

import (
	"context"
	"fmt"
	"log/slog"
	neturl "net/url"
	"strings"
	"time"

	"github.com/nats-io/nats.go"
)

// Connect opens a NATS connection for a long-running process: it reconnects
// forever, 250ms apart, and logs disconnects and reconnects to
// slog.Default(). The first connect is not retried, so a wrong URL fails at
// once. name identifies the connection to the server; opts override the
// defaults. Connect gives up when ctx ends.
func Connect(ctx context.Context, url, name string, opts ...nats.Option) (*nats.Conn, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("connect to nats at %s: %w", redact(url), err)
	}
	all := append([]nats.Option{
		nats.Name(name),
		nats.MaxReconnects(-1),
		nats.ReconnectWait(250 * time.Millisecond),
		nats.RetryOnFailedConnect(false),
		nats.DisconnectErrHandler(func(nc *nats.Conn, err error) {
			if !nc.IsClosed() {
				slog.Default().Warn("nats disconnected", "name", name, "error", err)
			}
		}),
		nats.ReconnectHandler(func(nc *nats.Conn) {
			slog.Default().Info("nats reconnected", "name", name, "url", nc.ConnectedUrlRedacted())
		}),
	}, opts...)

	type result struct {
		nc  *nats.Conn
		err error
	}
	done := make(chan result, 1)
	go func() {
		nc, err := nats.Connect(url, all...)
		done <- result{nc, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			return nil, fmt.Errorf("connect to nats at %s: %w", redact(url), r.err)
		}
		return r.nc, nil
	case <-ctx.Done():
		go func() { // close a connection that arrives too late
			if r := <-done; r.nc != nil {
				r.nc.Close()
			}
		}()
		return nil, fmt.Errorf("connect to nats at %s: %w", redact(url), ctx.Err())
	}
}

// redact removes credentials from a comma-separated list of server URLs, so
// that errors can name the servers without leaking secrets.
func redact(urls string) string {
	parts := strings.Split(urls, ",")
	for i, p := range parts {
		if u, err := neturl.Parse(strings.TrimSpace(p)); err == nil && u.User != nil {
			u.User = nil
			parts[i] = u.String()
		}
	}
	return strings.Join(parts, ",")
}
