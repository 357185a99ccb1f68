package broker

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/nats-io/nats.go"

	redactpkg "github.com/droverhq/drover/internal/redact"
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
			// the client's error may quote the URL it was given
			err := redactpkg.New(redactpkg.URLSecrets(url)...).Error(r.err)
			return nil, fmt.Errorf("connect to nats at %s: %w", redact(url), err)
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

// redact masks the credentials of a comma-separated list of server URLs,
// with or without a scheme (user:pass@host:4222), so that errors can name
// the servers without leaking secrets.
func redact(urls string) string { return redactpkg.URL(urls) }
