package review

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"

	"github.com/droverhq/drover/internal/pipeline"
	"github.com/droverhq/drover/internal/state"
	"github.com/droverhq/drover/subjects"
)

// QueueGroup is the queue group of the review services: exactly one
// worker answers each decision.
const QueueGroup = "drover-review"

// Service answers review decisions and, with an expiry, sweeps expired
// reviews.
type Service struct {
	nc    *nats.Conn
	names subjects.Names
	kv    jetstream.KeyValue
	store *state.Store
	pipe  *pipeline.Pipeline
	log   *slog.Logger
	cfg   Config
}

// Deps are what a review service works with.
type Deps struct {
	// NC is the connection decisions are answered on; required.
	NC *nats.Conn
	// Names names the subjects; required.
	Names subjects.Names
	// State is the bucket of task state; required.
	State jetstream.KeyValue
	// Pipeline applies the decisions; required.
	Pipeline *pipeline.Pipeline
	// Log is the service's logger; nil discards.
	Log *slog.Logger
}

// validate names the first missing dependency.
func (d Deps) validate() error {
	switch {
	case d.NC == nil:
		return errors.New("review: Deps.NC is required")
	case d.Names.Prefix() == "":
		return errors.New("review: Deps.Names is required")
	case d.State == nil:
		return errors.New("review: Deps.State is required")
	case d.Pipeline == nil:
		return errors.New("review: Deps.Pipeline is required")
	}
	return nil
}

// Config holds the service's settings.
type Config struct {
	// ExpireAfter is review.expire_after; 0 means no sweep. Reviews carry
	// their deadline in their state; a worker without it does not sweep.
	ExpireAfter time.Duration
	// Now is the clock; nil means time.Now.
	Now func() time.Time
}

// withDefaults returns c with its zero fields set to their defaults.
func (c Config) withDefaults() Config {
	if c.Now == nil {
		c.Now = time.Now
	}
	return c
}

// validate names the first setting that cannot work.
func (c Config) validate() error {
	if c.ExpireAfter < 0 {
		return fmt.Errorf("review: Config.ExpireAfter %v: must not be negative", c.ExpireAfter)
	}
	return nil
}

// New returns a review service, or an error naming a missing dependency
// or a bad setting.
func New(deps Deps, cfg Config) (*Service, error) {
	if err := deps.validate(); err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	log := deps.Log
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Service{nc: deps.NC, names: deps.Names, kv: deps.State, store: state.New(deps.State), pipe: deps.Pipeline,
		log: log, cfg: cfg.withDefaults()}, nil
}

// Start subscribes to the review subjects and starts the expiry sweep; the
// returned stop drains the subscription and ends the sweep.
func (s *Service) Start(ctx context.Context) (stop func(), err error) {
	sub, err := s.nc.QueueSubscribe(s.names.ReviewWildcard(), QueueGroup, func(m *nats.Msg) {
		reply := s.handle(ctx, m)
		b, _ := json.Marshal(reply)
		if err := m.Respond(b); err != nil && m.Reply != "" {
			s.log.Warn("review: could not reply", "subject", m.Subject, "err", err)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("review: subscribe %s: %w", s.names.ReviewWildcard(), err)
	}
	sctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	if s.cfg.ExpireAfter > 0 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.sweepLoop(sctx)
		}()
	}
	return func() {
		_ = sub.Drain()
		cancel()
		wg.Wait()
	}, nil
}

func (s *Service) handle(ctx context.Context, m *nats.Msg) subjects.ReviewReply {
	parts := strings.Split(m.Subject, ".")
	if len(parts) != 5 && len(parts) != 6 {
		return subjects.ReviewReply{Error: fmt.Sprintf("review subject %.200q is not <prefix>.ctl.review.<workflow>.<task>[.<reviewer>]", m.Subject)}
	}
	ids := make([]string, len(parts)-3)
	for i, tok := range parts[3:] {
		id, err := subjects.ParseToken(tok)
		if err == nil {
			err = subjects.ValidateID(id)
		}
		if err != nil {
			return subjects.ReviewReply{Error: fmt.Sprintf("token %q: %v", tok, err)}
		}
		ids[i] = id
	}
	var body subjects.ReviewDecisionRequest
	if len(m.Data) > subjects.MaxReviewCommentBytes+4096 {
		return subjects.ReviewReply{Workflow: ids[0], Task: ids[1], Error: fmt.Sprintf("body of %d bytes is too large", len(m.Data))}
	}
	if err := json.Unmarshal(m.Data, &body); err != nil {
		return subjects.ReviewReply{Workflow: ids[0], Task: ids[1], Error: fmt.Sprintf(`body must be {"decision": "approve"|"reject", "comment": "...", "reviewer": "..."}: %v`, err)}
	}
	if len(ids) == 3 {
		// The bound form: NATS let this client publish on the subject of
		// this reviewer, so the subject, not the body, says who decides.
		if body.Reviewer != "" && body.Reviewer != ids[2] {
			return subjects.ReviewReply{Workflow: ids[0], Task: ids[1],
				Error: fmt.Sprintf("reviewer %.130q in the body is not %.130q, the reviewer of the subject", body.Reviewer, ids[2])}
		}
		body.Reviewer = ids[2]
	}
	cctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	return s.Decide(cctx, ids[0], ids[1], body)
}

// Decide applies a decision on workflow/task and says how it went, as the
// control reply gives it.
func (s *Service) Decide(ctx context.Context, workflow, task string, r subjects.ReviewDecisionRequest) subjects.ReviewReply {
	reply := subjects.ReviewReply{Workflow: workflow, Task: task}
	if err := Validate(r); err != nil {
		reply.Error = err.Error()
		return reply
	}
	cur, err := s.store.GetTask(ctx, workflow, task)
	if errors.Is(err, state.ErrNotFound) {
		reply.Error = fmt.Sprintf("task %s/%s has no state: it is not awaiting review", workflow, task)
		return reply
	}
	if err != nil {
		reply.Error = err.Error()
		return reply
	}
	d := pipeline.ReviewDecision{Decision: r.Decision, Reviewer: r.Reviewer, Comment: r.Comment, At: s.cfg.Now().UTC()}
	st, err := s.pipe.DecideReview(ctx, cur, d)
	for range 3 {
		// The state may have moved without a decision (a redelivered
		// message taking the parked task over): decide again on the same
		// review, never on a later one.
		if !errors.Is(err, pipeline.ErrAlreadyDecided) || st.Revision != 0 {
			break
		}
		fresh, gerr := s.store.GetTask(ctx, workflow, task)
		if gerr != nil || !sameReview(cur, fresh) {
			break
		}
		cur = fresh
		st, err = s.pipe.DecideReview(ctx, cur, d)
	}
	if st.Revision != 0 {
		reply.State, reply.Revision = st.State, st.Revision
	}
	if err != nil {
		reply.Error = err.Error()
		if st.Revision == 0 {
			return reply
		}
		s.log.Warn("review decided, but the task could not be sent on", "workflow", workflow, "task", task, "err", err)
		return reply
	}
	s.log.Info("review decided", "workflow", workflow, "task", task, "decision", r.Decision, "reviewer", r.Reviewer, "state", st.State)
	return reply
}

// sameReview reports whether fresh still awaits the review cur awaited,
// undecided.
func sameReview(cur, fresh state.Task) bool {
	return fresh.State == subjects.StateAwaitingReview && fresh.Review != nil && cur.Review != nil &&
		fresh.Review.Decision == "" && fresh.Review.RequestedAt.Equal(cur.Review.RequestedAt) && fresh.Attempt == cur.Attempt
}

// sweepEvery is how often a worker looks for expired reviews: a tenth of
// the expiry, from 100ms to 30s.
func sweepEvery(expire time.Duration) time.Duration {
	return min(max(expire/10, 100*time.Millisecond), 30*time.Second)
}

func (s *Service) sweepLoop(ctx context.Context) {
	t := time.NewTicker(sweepEvery(s.cfg.ExpireAfter))
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.Sweep(ctx); err != nil && ctx.Err() == nil {
				s.log.Warn("review: expiry sweep failed", "err", err)
			}
		}
	}
}

// Sweep fails every review past its deadline with review_expired. Every
// worker with an expiry sweeps; each expiry is a compare-and-set on the
// task's revision, so exactly one of them fails each task, once. It
// returns how many this sweep expired.
func (s *Service) Sweep(ctx context.Context) (int, error) {
	waiting, err := Waiting(ctx, s.kv)
	if err != nil {
		return 0, err
	}
	now, n := s.cfg.Now(), 0
	for _, t := range waiting {
		ok, err := s.pipe.ExpireReview(ctx, t, now)
		switch {
		case errors.Is(err, pipeline.ErrAlreadyDecided), errors.Is(err, pipeline.ErrNotParked):
			continue // another worker (or a person) got there first
		case err != nil:
			return n, fmt.Errorf("review: expire %s/%s: %w", t.Workflow, t.Task, err)
		case ok:
			n++
			s.log.Info("review expired", "workflow", t.Workflow, "task", t.Task)
		}
	}
	return n, nil
}
