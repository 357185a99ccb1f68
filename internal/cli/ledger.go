package cli

import (
	"context"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/broker"
	"github.com/droverhq/drover/internal/ledger"
	"github.com/droverhq/drover/internal/ops"
)

// newLedger is the worker's cost ledger: the config's prices, Prometheus
// counters, and the fleet-wide spend that budgets are checked against.
func newLedger(ctx context.Context, nc *nats.Conn, g *globals, f serveFlags, m *ops.Metrics) (*ledger.Ledger, error) {
	js, err := jetstream.New(nc)
	if err != nil {
		return nil, err
	}
	var kv jetstream.KeyValue
	err = broker.WhilePlacing(ctx, g.log, func() (err error) {
		kv, err = ledger.OpenBucket(ctx, js, g.names, f.replicas)
		return err
	})
	if err != nil {
		return nil, err
	}
	k, err := ledger.NewKeeper(ledger.KeeperDeps{Spend: kv, Pause: ledger.NATSPauser(nc, g.names), Log: g.log}, f.budgets)
	if err != nil {
		return nil, err
	}
	return ledger.New(ledger.Deps{Metrics: ledger.NewMetrics(m.Registry), Keeper: k}, f.prices)
}
