package worker

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/nats-io/nats.go/micro"

	"github.com/droverhq/drover/internal/status"
)

// startService registers the worker as the NATS micro service "drover",
// with its identity as metadata and a status endpoint of its own on
// "<prefix>.status.<service id>", so `nats micro ls` and `drover status`
// find every worker of the fleet.
func (w *Worker) startService(started time.Time) (micro.Service, error) {
	svc, err := micro.AddService(w.nc, micro.Config{
		Name:        status.ServiceName,
		Version:     status.ServiceVersion(w.cfg.Version),
		Description: "Drover worker: runs planner -> implementer -> judge for task requests",
		Metadata: map[string]string{
			status.MetaWorkerID:    w.id,
			status.MetaHost:        w.host,
			status.MetaQueues:      strings.Join(w.cfg.Queues, ","),
			status.MetaConcurrency: strconv.Itoa(w.cfg.Concurrency),
			status.MetaPrefix:      w.cfg.Names.Prefix(),
			status.MetaStarted:     started.UTC().Format(time.RFC3339),
		},
	})
	if err != nil {
		return nil, fmt.Errorf("micro service: %w", err)
	}
	handler := micro.HandlerFunc(func(r micro.Request) {
		if err := r.RespondJSON(w.Status()); err != nil {
			w.cfg.Log.Warn("status endpoint: could not respond", "err", err)
		}
	})
	g := svc.AddGroup(w.cfg.Names.Prefix())
	if err := g.AddEndpoint(status.StatusEndpoint, handler, micro.WithEndpointSubject(status.StatusSubject(svc.Info().ID))); err != nil {
		_ = svc.Stop()
		return nil, fmt.Errorf("micro service: status endpoint: %w", err)
	}
	return svc, nil
}
