package cli

import (
	"github.com/spf13/cobra"

	"github.com/droverhq/drover/internal/broker"
)

func init() { register(newServerCmd) }

// newServerCmd runs the embedded NATS server alone: a JetStream server for
// local development, for workers started with --nats-url, and for fault
// drills that kill the server without killing a worker.
func newServerCmd(g *globals) *cobra.Command {
	var listen, data, sync string
	cmd := &cobra.Command{
		Use:   "server",
		Short: "Run only the embedded NATS server with JetStream (no worker)",
		Long: `Run the NATS server that drover serve embeds, without a worker, until SIGTERM or Ctrl-C.
Workers and clients reach it with --nats-url (or NATS_URL); so does the nats CLI.`,
		Example: "  drover server --listen 127.0.0.1:4222 --data ./.drover\n  drover serve --nats-url nats://127.0.0.1:4222",
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			interval, err := parseSync(sync)
			if err != nil {
				return err
			}
			emb, err := broker.StartEmbedded(broker.EmbeddedConfig{Listen: listen, DataDir: data, Sync: interval, ServerName: "drover-server", Logger: g.log})
			if err != nil {
				return err
			}
			g.log.Info("nats server ready", "url", emb.ClientURL(), "data", data, "sync", sync)
			<-cmd.Context().Done()
			emb.Shutdown()
			g.log.Info("nats server stopped")
			return nil
		},
	}
	fl := cmd.Flags()
	fl.StringVar(&listen, "listen", broker.DefaultListen, "address to listen on")
	fl.StringVar(&data, "data", broker.DefaultDataDir, "JetStream directory")
	fl.StringVar(&sync, "sync", "always", `fsync: "always" (before every ack) or an interval such as 2m`)
	return cmd
}
