package cli

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/broker"
)

// newServerCmd runs the embedded NATS server alone: a JetStream server for
// local development, for workers started with --nats-url, and for fault
// drills that kill the server without killing a worker. With
// --cluster-listen it is one node of a NATS cluster.
func newServerCmd(g *globals) *cobra.Command {
	var listen, data, sync, name string
	var lameDuck, lameDuckGrace time.Duration
	var cluster broker.ClusterConfig
	var auth serverAuthFlags
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run only the embedded NATS server with JetStream (no worker)",
		Long: `Run the NATS server that drover serve embeds, without a worker, until SIGTERM or Ctrl-C.
SIGUSR2 stops it in lame duck mode instead, for a rolling restart of a cluster: it
takes no new clients, hands its stream and consumer leaderships to other nodes, and
after --lame-duck-grace closes its clients spread over --lame-duck, so workers
reconnect to the other nodes a few at a time; then it exits 0.
Workers and clients reach it with --nats-url (or NATS_URL); so does the nats CLI.

With --cluster-listen it is one node of a NATS cluster: give every node the same
--cluster-name and --routes (the cluster addresses of all nodes, its own included), its
own --name and --data. A 3-node cluster keeps working while one node is down; start
workers with --replicas 3 and the client URLs of all nodes. For production clusters,
prefer nats-server itself (deploy/nats/ has the configuration files).

It listens on the loopback address unless --listen says otherwise. Before exposing it,
require a login: --server-user with --server-password-file (or DROVER_SERVER_PASSWORD),
--server-token-file (or DROVER_SERVER_TOKEN), or --server-config FILE, a nats-server
configuration with accounts, users and permissions (deploy/nats/permissions.conf). A
server reachable from other machines without any of them logs a warning at start.`,
		Example: `  drover server --listen 127.0.0.1:4222 --data ./.drover
  drover serve --nats-url nats://127.0.0.1:4222

  # a 3-node cluster on one machine
  routes=nats://127.0.0.1:6222,nats://127.0.0.1:6223,nats://127.0.0.1:6224
  drover server --name n1 --listen 127.0.0.1:4222 --data ./n1 --cluster-name drover --cluster-listen 127.0.0.1:6222 --routes $routes
  drover server --name n2 --listen 127.0.0.1:4223 --data ./n2 --cluster-name drover --cluster-listen 127.0.0.1:6223 --routes $routes
  drover server --name n3 --listen 127.0.0.1:4224 --data ./n3 --cluster-name drover --cluster-listen 127.0.0.1:6224 --routes $routes
  drover serve --replicas 3 --nats-url nats://127.0.0.1:4222,nats://127.0.0.1:4223,nats://127.0.0.1:4224`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := auth.resolve(cmd.Flags(), &listen); err != nil {
				return err
			}
			interval, err := broker.ParseSync(sync)
			if err != nil {
				return fmt.Errorf("--sync %w", err)
			}
			if name == "" {
				name = defaultServerName(cluster.Listen)
			}
			emb, err := broker.StartEmbedded(broker.EmbeddedConfig{
				Listen: listen, DataDir: data, Sync: interval, ServerName: name, Cluster: cluster, Logger: g.log,
				Auth: auth.auth, ConfigFile: auth.config, LameDuck: lameDuck, LameDuckGrace: lameDuckGrace,
			})
			if err != nil {
				return err
			}
			attrs := []any{"url", emb.ClientURL(), "name", name, "data", data, "sync", sync, "auth", auth.auth}
			if auth.config != "" {
				attrs = append(attrs, "config", auth.config)
			}
			if cluster.Listen != "" {
				attrs = append(attrs, "cluster", cluster.Name, "cluster_listen", cluster.Listen, "routes", strings.Join(cluster.Routes, ","))
			}
			g.log.Info("nats server ready", attrs...)
			lame, stopLame := lameDuckSignals()
			defer stopLame()
			select {
			case <-cmd.Context().Done():
				emb.Shutdown()
			case <-lame:
				g.log.Info("lame duck mode: clients move to other nodes, then the server stops",
					"grace", lameDuckGrace, "duration", lameDuck)
				emb.LameDuck()
			}
			g.log.Info("nats server stopped")
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", broker.DefaultListen, "address to listen on")
	fl.StringVar(&data, "data", broker.DefaultDataDir, "JetStream directory")
	fl.StringVar(&sync, "sync", "always", `fsync: "always" (before every ack) or an interval such as 2m`)
	fl.StringVar(&name, "name", "", `server name, unique in a cluster (default "drover-server", or host and cluster port on a cluster)`)
	fl.StringVar(&cluster.Name, "cluster-name", "", "cluster name, the same on every node (with --cluster-listen)")
	fl.StringVar(&cluster.Listen, "cluster-listen", "", "address for routes from the other cluster nodes; empty runs the server alone")
	fl.StringSliceVar(&cluster.Routes, "routes", nil, "cluster addresses of the nodes to join, nats://host:port, comma-separated (its own may be included)")
	fl.DurationVar(&lameDuck, "lame-duck", 30*time.Second, "on SIGUSR2 (lame duck mode, for a rolling restart), close the clients spread over this long, then stop")
	fl.DurationVar(&lameDuckGrace, "lame-duck-grace", 5*time.Second, "on SIGUSR2, wait this long before closing the first client")
	addServerAuthFlags(fl, &auth)
	return cmd
}

// defaultServerName names a server: "drover-server" alone, the host name
// and cluster port on a cluster, where names must be unique.
func defaultServerName(clusterListen string) string {
	if clusterListen == "" {
		return "drover-server"
	}
	host, _ := os.Hostname()
	port := clusterListen[strings.LastIndexByte(clusterListen, ':')+1:]
	return fmt.Sprintf("drover-%s-%s", host, port)
}
