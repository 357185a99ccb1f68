package pipeline

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/droverhq/drover/internal/blobs"
	"github.com/droverhq/drover/internal/runner"
	"github.com/droverhq/drover/subjects"
)

// metaSessionState is the implementer result's metadata key that holds
// the blob reference of the agent's kept session state.
const metaSessionState = "session_state"

// keepSession stores the agent session state an implementer's run left
// (res.Session) in the object store and records its reference in the
// result's metadata, so the next attempt resumes it on any worker. A
// state that cannot be stored is noted ("session_kept") and the next
// attempt starts fresh.
func (p *Pipeline) keepSession(ctx context.Context, t *taskRun, res *runner.Result) {
	st := res.Session
	res.Session = nil
	if st == nil {
		return
	}
	if res.Metadata == nil {
		res.Metadata = map[string]any{}
	}
	if p.d.Blobs == nil {
		res.Metadata["session_kept"] = "not kept: no object store"
		return
	}
	ref, err := p.d.Blobs.Put(ctx, st.Data)
	if err != nil {
		p.taskLog(t, subjects.RoleImplementer).Warn("agent session not kept; the next attempt starts fresh", "err", err)
		res.Metadata["session_kept"] = "not kept: " + boundError(err.Error())
		return
	}
	res.Metadata[metaSessionState] = ref
}

// sessionOf is the agent session an implementer's result reports in its
// metadata (agent, session_id, session_state), or nil.
func sessionOf(md map[string]any) *subjects.AgentSession {
	agent, _ := md["agent"].(string)
	id, _ := md["session_id"].(string)
	if agent == "" || id == "" {
		return nil
	}
	s := &subjects.AgentSession{Agent: agent, ID: id}
	s.CostUSD, _ = md["session_cost_usd"].(float64)
	if u, ok := md["session_usage"].(map[string]any); ok {
		s.InputTokens, s.CacheReadTokens, s.OutputTokens = tokenCount(u["input_tokens"]), tokenCount(u["cache_read_input_tokens"]), tokenCount(u["output_tokens"])
	}
	switch ref := md[metaSessionState].(type) {
	case json.RawMessage:
		s.State = ref
	case map[string]any: // a cached result's metadata, decoded
		s.State, _ = json.Marshal(ref)
	}
	return s
}

// tokenCount is a token count of a result's metadata: an int64 as the runner
// made it, a float64 as JSON decoded it; 0 for anything else.
func tokenCount(v any) int64 {
	switch n := v.(type) {
	case int64:
		return max(n, 0)
	case float64:
		if n > 0 && n < 1e15 {
			return int64(n)
		}
	}
	return 0
}

// resumeSession gives an implementer's attempt after a rejection the
// session the previous attempt left, as the task's state records it, with
// its state read from the object store (or why it could not be).
func (p *Pipeline) resumeSession(ctx context.Context, t *taskRun, req *runner.Request) {
	if t.ws == nil || req.Attempt <= 1 {
		return
	}
	last, ok := t.pinned().Last()
	if !ok || last.Attempt != req.Attempt-1 || last.Session == nil {
		return
	}
	s := last.Session
	req.Session = &runner.Session{Agent: s.Agent, ID: s.ID, CostUSD: s.CostUSD,
		InputTokens: s.InputTokens, CacheReadTokens: s.CacheReadTokens, OutputTokens: s.OutputTokens}
	if len(s.State) == 0 {
		req.Session.Missing = "none was kept"
		return
	}
	var ref blobs.Ref
	if err := json.Unmarshal(s.State, &ref); err != nil || !blobs.ValidName(ref.Blob) {
		req.Session.Missing = "its reference is not a blob reference"
		return
	}
	if p.d.Blobs == nil {
		req.Session.Missing = "no object store"
		return
	}
	data, err := p.d.Blobs.Get(ctx, ref.Blob)
	switch {
	case err != nil:
		req.Session.Missing = boundError(err.Error())
	case len(data) > runner.MaxSessionBytes:
		req.Session.Missing = fmt.Sprintf("blob %s exceeds %d bytes", ref.Blob, runner.MaxSessionBytes)
	default:
		req.Session.State = data
	}
}
