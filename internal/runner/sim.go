package runner

import (
	"context"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/droverhq/drover/internal/backoff"
	"github.com/droverhq/drover/subjects"
)

// SimIdentity is the identity of the built-in sim runner. Bump its version
// whenever the sim's output for a given request changes.
const SimIdentity = "sim/v1"

// SimOptions configure a Sim.
type SimOptions struct {
	// CallLog, when set, is a file every call appends one JSON line to
	// ({"role","workflow","task","attempt","try","time","pid","in_flight"}).
	// Each line is one write to a file opened with O_APPEND, so several
	// processes can share it; fault tests use it to count role executions
	// across workers.
	CallLog string
}

// Sim is the built-in deterministic runner (see the contract's "The
// simulator runner"). Its output is a pure function of the request, except
// for Try and the workflow ID; metadata.sim steers latency, failures,
// panics and hangs. In a workspace the implementer also edits files (see
// simEdit): deterministic in the request. A Sim counts its calls and is
// safe for concurrent use.
type Sim struct {
	opts SimOptions

	planner, implementer, judge  atomic.Int64
	total, inFlight, maxInFlight atomic.Int64

	// onStart, when set (tests only), is called after a call is counted.
	onStart func(Request)
}

// NewSim returns a Sim with the given options.
func NewSim(opts SimOptions) *Sim { return &Sim{opts: opts} }

// Identity implements Runner.
func (s *Sim) Identity() string { return SimIdentity }

// RunsInline implements Inline: the sim computes its output in process and
// its latency and hang controls wait on the context.
func (s *Sim) RunsInline() bool { return true }

// Run implements Runner. It counts the call, appends it to the call log,
// then applies the task's sim controls in this order: latency, hang, panic,
// fail; and finally returns the deterministic output for the role.
func (s *Sim) Run(ctx context.Context, req Request) (Result, error) {
	inFlight := s.begin(req.Role)
	defer s.inFlight.Add(-1)
	if s.onStart != nil {
		s.onStart(req)
	}
	if s.opts.CallLog != "" {
		if err := appendCallLog(s.opts.CallLog, req, inFlight, time.Now()); err != nil {
			return Result{}, fmt.Errorf("sim: call log: %w", err)
		}
	}
	ctl, err := subjects.SimControlsOf(req.Task.Metadata)
	if err != nil {
		return Result{}, Permanentf("%v", err)
	}
	if ms := ctl.LatencyMS[req.Role]; ms > 0 {
		if err := backoff.Sleep(ctx, time.Duration(ms)*time.Millisecond); err != nil {
			return Result{}, fmt.Errorf("sim: %s latency: %w", req.Role, err)
		}
	}
	if ctl.Hang != "" && ctl.Hang == req.Role {
		<-ctx.Done()
		return Result{}, fmt.Errorf("sim: %s hang: %w", req.Role, ctx.Err())
	}
	if ctl.Panic != "" && ctl.Panic == req.Role {
		panic(fmt.Sprintf("sim: panic in %s", req.Role))
	}
	if f := ctl.Fail; f != nil && f.Role == req.Role && (f.Times == -1 || req.Try <= f.Times) {
		return Result{}, fmt.Errorf("sim: %s failure on try %d", req.Role, req.Try)
	}
	if req.Role == subjects.RoleImplementer && req.Workspace != nil {
		if err := simEdit(req); err != nil {
			return Result{}, err
		}
	}
	return simOutput(req, ctl)
}

// begin counts a call and updates the concurrency gauge and its maximum.
func (s *Sim) begin(r subjects.Role) int64 {
	s.total.Add(1)
	if c := s.counter(r); c != nil {
		c.Add(1)
	}
	n := s.inFlight.Add(1)
	for {
		m := s.maxInFlight.Load()
		if n <= m || s.maxInFlight.CompareAndSwap(m, n) {
			return n
		}
	}
}

func (s *Sim) counter(r subjects.Role) *atomic.Int64 {
	switch r {
	case subjects.RolePlanner:
		return &s.planner
	case subjects.RoleImplementer:
		return &s.implementer
	case subjects.RoleJudge:
		return &s.judge
	}
	return nil
}

// Calls returns how many calls of role r have started.
func (s *Sim) Calls(r subjects.Role) int64 {
	if c := s.counter(r); c != nil {
		return c.Load()
	}
	return 0
}

// TotalCalls returns how many calls have started, of any role.
func (s *Sim) TotalCalls() int64 { return s.total.Load() }

// InFlight returns how many calls are running now.
func (s *Sim) InFlight() int64 { return s.inFlight.Load() }

// MaxConcurrent returns the most calls seen running at once since the Sim
// was made or last Reset.
func (s *Sim) MaxConcurrent() int64 { return s.maxInFlight.Load() }

// Reset zeroes the call counters and the concurrency maximum. Calls still
// running keep the in-flight gauge correct.
func (s *Sim) Reset() {
	s.planner.Store(0)
	s.implementer.Store(0)
	s.judge.Store(0)
	s.total.Store(0)
	s.maxInFlight.Store(0)
}
