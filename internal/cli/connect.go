package cli

import (
	"context"
	"errors"
	"fmt"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/spf13/pflag"

	"github.com/droverhq/drover/internal/broker"
)

// natsEnv maps a connection flag to the nats CLI's environment variable
// for it, which applyEnv reads when the flag's DROVER_* variable is unset.
// --tlsfirst has none in the nats CLI; it reads DROVER_TLSFIRST only.
var natsEnv = map[string]string{
	"nats-url": "NATS_URL",
	"user":     "NATS_USER",
	"password": "NATS_PASSWORD",
	"token":    "NATS_TOKEN",
	"nkey":     "NATS_NKEY",
	"creds":    "NATS_CREDS",
	"tlscert":  "NATS_CERT",
	"tlskey":   "NATS_KEY",
	"tlsca":    "NATS_CA",
}

// secretFlags are never echoed in an error.
var secretFlags = map[string]bool{"password": true, "token": true, "server-password": true, "server-token": true}

// addAuthFlags registers the credential and TLS flags every command shares.
func addAuthFlags(pf *pflag.FlagSet, a *broker.AuthOptions) {
	pf.StringVar(&a.User, "user", "", "NATS user name (env NATS_USER or DROVER_USER)")
	pf.StringVar(&a.Password, "password", "", "NATS password; prefer the env variable, a flag shows in ps (env NATS_PASSWORD or DROVER_PASSWORD)")
	pf.StringVar(&a.Token, "token", "", "NATS authentication token; prefer the env variable (env NATS_TOKEN or DROVER_TOKEN)")
	pf.StringVar(&a.NkeyFile, "nkey", "", "file of a NATS user nkey seed (env NATS_NKEY or DROVER_NKEY)")
	pf.StringVar(&a.CredsFile, "creds", "", "NATS user credentials file: JWT and seed (env NATS_CREDS or DROVER_CREDS)")
	pf.StringVar(&a.TLSCert, "tlscert", "", "TLS client certificate file, PEM (env NATS_CERT or DROVER_TLSCERT)")
	pf.StringVar(&a.TLSKey, "tlskey", "", "TLS client private key file, PEM (env NATS_KEY or DROVER_TLSKEY)")
	pf.StringVar(&a.TLSCA, "tlsca", "", "TLS certificate authorities that sign the server's certificate, PEM (env NATS_CA or DROVER_TLSCA)")
	pf.BoolVar(&a.TLSFirst, "tlsfirst", false, "TLS handshake before the server's greeting; the server needs handshake_first (env DROVER_TLSFIRST)")
	pf.StringVar(&a.InboxPrefix, "inbox-prefix", "", `prefix of this client's reply subjects (default "_INBOX_<user>" with --user, else "_INBOX"); deploy/nats/profiles.conf lets each profile read its own only (env DROVER_INBOX_PREFIX)`)
}

// natsOptions are the credential and TLS options of a connection to the
// server at --nats-url; a bad flag or unreadable file is an error naming it.
func (g *globals) natsOptions() ([]nats.Option, error) {
	return g.auth.Options()
}

// client is a connection of a client command.
type client struct {
	nc *nats.Conn
	js jetstream.JetStream
}

func (c *client) Close() { c.nc.Close() }

// connect opens the client connection of a command that is not serve,
// with the global credential and TLS options.
func (g *globals) connect(ctx context.Context, name string) (*client, error) {
	url := g.natsURL
	if url == "" {
		url = DefaultNATSURL
	}
	opts, err := g.natsOptions()
	if err != nil {
		return nil, err
	}
	nc, err := broker.Connect(ctx, url, "drover "+name, opts...)
	if errors.Is(err, nats.ErrAuthorization) || errors.Is(err, nats.ErrAuthExpired) || errors.Is(err, nats.ErrAuthRevoked) {
		return nil, fmt.Errorf("%w (the server refused the credentials: check --user/--password, --token, --nkey or --creds; auth: %s)", err, g.auth)
	}
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
