package cli

import (
	"context"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/broker"
)

// client is a connection of a client command.
type client struct {
	nc *nats.Conn
	js jetstream.JetStream
}

func (c *client) Close() { c.nc.Close() }

// connect opens the client connection of a command that is not serve.
func (g *globals) connect(ctx context.Context, name string) (*client, error) {
	url := g.natsURL
	if url == "" {
		url = DefaultNATSURL
	}
	nc, err := broker.Connect(ctx, url, "drover "+name)
	if err != nil {
		return nil, fmt.Errorf("%w (is `drover serve` running? set --nats-url or NATS_URL)", err)
	}
	js, err := jetstream.New(nc)
	if err != nil {
		nc.Close()
		return nil, err
	}
	return &client{nc: nc, js: js}, nil
}
