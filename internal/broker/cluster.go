package broker

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats-server/v2/server"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/backoff"
)

// ClusterConfig makes an embedded server one node of a NATS cluster. The
// zero value runs the server alone.
type ClusterConfig struct {
	// Name is the cluster's name, the same on every node (required with
	// Listen).
	Name string
	// Listen is the address other nodes' routes connect to, host:port.
	// Empty: the server is not clustered.
	Listen string
	// Routes are the nats://host:port cluster addresses of the nodes to
	// join. They may include this node's own address, so every node can be
	// given the same list.
	Routes []string
}

// enabled reports whether the server joins a cluster.
func (c ClusterConfig) enabled() bool { return c.Listen != "" }

// apply validates c and sets the cluster options of a server named
// serverName. JetStream needs a server name that is unique in the cluster.
func (c ClusterConfig) apply(opts *server.Options, serverName string) error {
	if !c.enabled() {
		if c.Name != "" || len(c.Routes) > 0 {
			return errors.New("embedded nats: cluster name or routes given without a cluster listen address")
		}
		return nil
	}
	if c.Name == "" {
		return errors.New("embedded nats: cluster listen address given without a cluster name")
	}
	if serverName == "" {
		return errors.New("embedded nats: a cluster node needs a server name, unique in the cluster")
	}
	host, port, err := listenHostPort(c.Listen)
	if err != nil {
		return fmt.Errorf("embedded nats: cluster listen address %q: %w", c.Listen, err)
	}
	opts.Cluster = server.ClusterOpts{Name: c.Name, Host: host, Port: port}
	for _, r := range c.Routes {
		u, err := url.Parse(strings.TrimSpace(r))
		if err != nil || u.Scheme != "nats" || u.Host == "" {
			return fmt.Errorf("embedded nats: route %q: want nats://host:port", r)
		}
		opts.Routes = append(opts.Routes, u)
	}
	return nil
}

// listenHostPort splits a listen address for nats-server's options: port 0
// (any free port) becomes server.RANDOM_PORT, since to nats-server 0 means
// its default port.
func listenHostPort(addr string) (string, int, error) {
	host, portStr, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portStr)
	if err != nil || port < 0 || port > 65535 {
		return "", 0, errors.New("bad port")
	}
	if port == 0 {
		port = server.RANDOM_PORT
	}
	return host, port, nil
}

// Replicas returns the replicas to create streams and buckets with: want on
// a cluster, 1 on a single server (which refuses more than one replica).
// A downgrade is logged to log.
func Replicas(js jetstream.JetStream, want int, log *slog.Logger) int {
	if want <= 1 || js.Conn().ConnectedClusterName() != "" {
		return want
	}
	log.Warn("not a NATS cluster: streams and buckets get 1 replica", "replicas", want)
	return 1
}

// ErrNoPeers is the server's "no suitable peers for placement"
// (JSClusterNoPeersErrF): a cluster cannot place a replicated stream yet,
// as while its nodes start and report to the meta leader, or a node is
// down.
const ErrNoPeers jetstream.ErrorCode = 10005

// PlacementWait bounds how long WhilePlacing tries again.
const PlacementWait = 30 * time.Second

// WhilePlacing runs create, and runs it again with a backoff while it
// fails because the cluster cannot place a replicated stream yet, for up
// to PlacementWait; each wait is logged. Any other error, or the last
// placement error with how long it waited, is returned. create must be
// idempotent (provisioning is).
func WhilePlacing(ctx context.Context, log *slog.Logger, create func() error) error {
	policy := backoff.Policy{Base: 100 * time.Millisecond, Max: 2 * time.Second}
	start := time.Now()
	for try := 1; ; try++ {
		err := create()
		if !isAPIError(err, ErrNoPeers) {
			return err
		}
		if time.Since(start) >= PlacementWait {
			return fmt.Errorf("%w (the cluster could not place the replicas for %s: are enough nodes up for --replicas?)", err, PlacementWait)
		}
		d := policy.Delay(try)
		if log != nil {
			log.Warn("the cluster cannot place the replicas yet; trying again", "err", err, "in", d)
		}
		if err := backoff.Sleep(ctx, d); err != nil {
			return err
		}
	}
}
