package status

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/nats-io/nats.go/micro"

	"github.com/droverhq/drover/subjects"
)

// Defaults of Config.
const (
	DefaultDiscover = 500 * time.Millisecond
	DefaultTimeout  = 2 * time.Second
)

// Config tunes a collection. Zero fields take the defaults.
type Config struct {
	// Discover is how long replies to the service discovery request are
	// gathered (default 500ms): every worker that answers within it is
	// listed.
	Discover time.Duration
	// Timeout bounds each request to JetStream or to a worker's status
	// endpoint (default 2s).
	Timeout time.Duration
}

func (o Config) withDefaults() Config {
	if o.Discover <= 0 {
		o.Discover = DefaultDiscover
	}
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	return o
}

// Deps are what a Collector asks.
type Deps struct {
	// NC discovers the workers and asks their status endpoints; required.
	NC *nats.Conn
	// JS reads the streams, consumers and buckets; required.
	JS jetstream.JetStream
	// Names names the deployment; required.
	Names subjects.Names
}

// Collector takes status snapshots of one deployment.
type Collector struct {
	nc    *nats.Conn
	js    jetstream.JetStream
	names subjects.Names
	opts  Config
}

// NewCollector returns a Collector for the deployment deps.Names belongs
// to, or an error naming a missing dependency.
func NewCollector(deps Deps, cfg Config) (*Collector, error) {
	switch {
	case deps.NC == nil:
		return nil, errors.New("status: Deps.NC is required")
	case deps.JS == nil:
		return nil, errors.New("status: Deps.JS is required")
	case deps.Names.Prefix() == "":
		return nil, errors.New("status: Deps.Names is required")
	}
	return &Collector{nc: deps.NC, js: deps.JS, names: deps.Names, opts: cfg.withDefaults()}, nil
}

// Collect takes a snapshot. The JetStream counts are required (an error
// means the deployment is not provisioned or the server does not answer);
// a worker whose status endpoint fails is listed with its error.
func (c *Collector) Collect(ctx context.Context) (Report, error) {
	r := Report{At: time.Now().UTC(), Prefix: c.names.Prefix()}
	var (
		wg      sync.WaitGroup
		workers []Worker
		werr    error
	)
	wg.Add(1)
	go func() {
		defer wg.Done()
		workers, werr = c.workers(ctx)
	}()
	err := c.jetStream(ctx, &r)
	wg.Wait()
	if err != nil {
		return Report{}, err
	}
	if werr != nil {
		return Report{}, werr
	}
	r.Workers = workers
	for _, w := range workers {
		r.Cache.Hits += w.Cache.Hits
		r.Cache.Misses += w.Cache.Misses
	}
	if n := r.Cache.Hits + r.Cache.Misses; n > 0 {
		ratio := float64(r.Cache.Hits) / float64(n)
		r.Cache.HitRatio = &ratio
	}
	return r, nil
}

// jetStream fills in the queues, the cache entries and the audit size.
func (c *Collector) jetStream(ctx context.Context, r *Report) error {
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	queues, err := c.queues(ctx)
	if err != nil {
		return err
	}
	r.Queues = queues
	kv, err := c.js.KeyValue(ctx, c.names.CacheBucket())
	if err != nil {
		return fmt.Errorf("bucket %s: %w", c.names.CacheBucket(), err)
	}
	st, err := kv.Status(ctx)
	if err != nil {
		return fmt.Errorf("bucket %s: %w", c.names.CacheBucket(), err)
	}
	r.Cache.Entries = st.Values()
	audit, err := c.js.Stream(ctx, c.names.AuditStream())
	if err != nil {
		return fmt.Errorf("stream %s: %w", c.names.AuditStream(), err)
	}
	info := audit.CachedInfo()
	r.Audit = Audit{Messages: info.State.Msgs, Bytes: info.State.Bytes}
	return nil
}

// queues reads every queue's consumer on the tasks stream and the DLQ
// counts per subject, in one request for all queues.
func (c *Collector) queues(ctx context.Context) ([]Queue, error) {
	tasks, err := c.js.Stream(ctx, c.names.TasksStream())
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w (has a worker ever started with --prefix %s?)", c.names.TasksStream(), err, c.names.Prefix())
	}
	byName := map[string]*Queue{}
	lister := tasks.ListConsumers(ctx)
	for ci := range lister.Info() {
		q := strings.TrimPrefix(ci.Config.FilterSubject, c.names.TaskSubject(""))
		if q == ci.Config.FilterSubject || ci.Name != c.names.Consumer(q) {
			continue // not a queue's consumer
		}
		byName[q] = &Queue{Name: q, Consumer: ci.Name, Pending: ci.NumPending, InFlight: ci.NumAckPending, Redelivered: ci.NumRedelivered}
	}
	if err := lister.Err(); err != nil {
		return nil, fmt.Errorf("stream %s: consumers: %w", c.names.TasksStream(), err)
	}
	dlq, err := c.js.Stream(ctx, c.names.DLQStream())
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", c.names.DLQStream(), err)
	}
	info, err := dlq.Info(ctx, jetstream.WithSubjectFilter(c.names.DLQWildcard()))
	if err != nil {
		return nil, fmt.Errorf("stream %s: %w", c.names.DLQStream(), err)
	}
	for subj, n := range info.State.Subjects {
		q := strings.TrimPrefix(subj, c.names.DLQSubject(""))
		if byName[q] == nil {
			byName[q] = &Queue{Name: q}
		}
		byName[q].DeadLettered = n
	}
	out := make([]Queue, 0, len(byName))
	for _, q := range byName {
		out = append(out, *q)
	}
	slices.SortFunc(out, func(a, b Queue) int { return cmp.Compare(a.Name, b.Name) })
	return out, nil
}

// workers discovers the deployment's workers and asks each for its status.
func (c *Collector) workers(ctx context.Context) ([]Worker, error) {
	infos, err := c.discover(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Worker, len(infos))
	var wg sync.WaitGroup
	for i, info := range infos {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out[i] = c.ask(ctx, info)
		}()
	}
	wg.Wait()
	slices.SortFunc(out, func(a, b Worker) int {
		return cmp.Or(cmp.Compare(a.WorkerID, b.WorkerID), cmp.Compare(a.ServiceID, b.ServiceID))
	})
	return out, nil
}

// discover sends one INFO request to every "drover" service and gathers
// the replies of this deployment's workers for the discovery window.
func (c *Collector) discover(ctx context.Context) ([]micro.Info, error) {
	subj, err := micro.ControlSubject(micro.InfoVerb, ServiceName, "")
	if err != nil {
		return nil, err
	}
	inbox := c.nc.NewInbox()
	sub, err := c.nc.SubscribeSync(inbox)
	if err != nil {
		return nil, fmt.Errorf("discover workers: %w", err)
	}
	defer func() { _ = sub.Unsubscribe() }()
	if err := c.nc.PublishRequest(subj, inbox, nil); err != nil {
		return nil, fmt.Errorf("discover workers: %w", err)
	}
	wctx, cancel := context.WithTimeout(ctx, c.opts.Discover)
	defer cancel()
	var infos []micro.Info
	for {
		msg, err := sub.NextMsgWithContext(wctx)
		if err != nil {
			if ctx.Err() != nil {
				return nil, ctx.Err()
			}
			if errors.Is(err, context.DeadlineExceeded) {
				return infos, nil
			}
			return nil, fmt.Errorf("discover workers: %w", err)
		}
		var info micro.Info
		if json.Unmarshal(msg.Data, &info) != nil || info.Metadata[MetaPrefix] != c.names.Prefix() {
			continue // not a Drover worker of this deployment
		}
		infos = append(infos, info)
	}
}

// ask calls one worker's status endpoint; on failure the worker is
// described from its metadata.
func (c *Collector) ask(ctx context.Context, info micro.Info) Worker {
	w := Worker{ServiceID: info.ID, WorkerStatus: fromMetadata(info)}
	i := slices.IndexFunc(info.Endpoints, func(e micro.EndpointInfo) bool { return e.Name == StatusEndpoint })
	if i < 0 {
		w.Error = "no status endpoint"
		return w
	}
	ctx, cancel := context.WithTimeout(ctx, c.opts.Timeout)
	defer cancel()
	msg, err := c.nc.RequestWithContext(ctx, info.Endpoints[i].Subject, nil)
	if err != nil {
		w.Error = err.Error()
		return w
	}
	if e := msg.Header.Get(micro.ErrorHeader); e != "" {
		w.Error = e
		return w
	}
	var st WorkerStatus
	if err := json.Unmarshal(msg.Data, &st); err != nil {
		w.Error = "status reply: " + err.Error()
		return w
	}
	w.WorkerStatus = st
	return w
}

// fromMetadata describes a worker from its service metadata alone.
func fromMetadata(info micro.Info) WorkerStatus {
	md := info.Metadata
	st := WorkerStatus{WorkerID: md[MetaWorkerID], Host: md[MetaHost], Version: info.Version}
	st.Concurrency, _ = strconv.Atoi(md[MetaConcurrency])
	if q := md[MetaQueues]; q != "" {
		st.Queues = strings.Split(q, ",")
	}
	if t, err := time.Parse(time.RFC3339, md[MetaStarted]); err == nil {
		st.Started = t
		st.UptimeS = time.Since(t).Seconds()
	}
	return st
}
