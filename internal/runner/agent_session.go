package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// How an implementer's attempt used the agent's session, recorded in its
// result's metadata as "session" (with "session_reason" for a fallback).
const (
	// SessionFresh: a first attempt, or one with no session to resume.
	SessionFresh = "fresh"
	// SessionResumed: the attempt resumed the previous attempt's session
	// with the feedback alone.
	SessionResumed = "resumed"
	// SessionFallback: there was a session to resume and it could not be
	// (its state missing or too big, another agent, the CLI refused it);
	// the attempt started fresh with the full prompt and feedback.
	SessionFallback = "fallback"
)

// MaxSessionBytes bounds the session state kept for a task: a session
// file larger than this is not kept, and the next attempt starts fresh.
const MaxSessionBytes = 8 << 20

// Session is the agent session an attempt resumes.
type Session struct {
	// Agent is the preset that ran it; ID the CLI's session ID.
	Agent, ID string
	// State is the session's files as the run that made it kept them
	// (SessionState.Data); nil when none could be loaded, Missing says
	// why.
	State   []byte
	Missing string
	// CostUSD is the session's cost as the CLI last reported it
	// (metadata "session_cost_usd"): Claude Code's total_cost_usd of a
	// resumed session counts the earlier runs too.
	CostUSD float64
	// InputTokens (counting the cached), CacheReadTokens and OutputTokens
	// are the session's usage as the CLI last reported it (metadata
	// "session_usage"): Codex's of a resumed thread counts the earlier
	// runs too.
	InputTokens, CacheReadTokens, OutputTokens int64
}

// SessionState is an agent's session after an implementer's run: what a
// later attempt, on this worker or another, needs to resume it. Data is
// written by the agent, so untrusted: it is only ever restored into the
// task's own private HOME, as the session file of the preset's CLI.
type SessionState struct {
	Agent, ID string
	Data      []byte
}

// runSession runs a preset agent's implementer. An attempt after a
// rejection with the previous attempt's session resumes it with a short
// prompt (the feedback) when it can: the CLI can resume and the state
// was restored into the task's private HOME; else, or when the CLI
// refuses to resume, it runs fresh with the full prompt. Its result says
// which ("session", "session_reason") and carries the session's state
// for the pipeline to keep.
func (e *Exec) runSession(ctx context.Context, req Request) (Result, error) {
	home, why := e.sessionHome(req)
	mode, reason := SessionFresh, ""
	var (
		res Result
		err error
	)
	if s := req.Session; s != nil && req.Attempt > 1 {
		mode = SessionFallback
		reason, err = e.resume(ctx, req, s, home, why, &res)
		if err != nil {
			return Result{}, err
		}
		if reason == "" {
			mode = SessionResumed
		}
	}
	if mode != SessionResumed {
		if res, err = e.run(ctx, req, e.cfg.Argv, nil); err != nil {
			return Result{}, err
		}
	}
	if res.Metadata == nil {
		res.Metadata = map[string]any{}
	}
	if c, ok := res.Metadata["cost_usd"].(float64); ok {
		res.Metadata["session_cost_usd"] = c
		if mode == SessionResumed && req.Session.CostUSD > 0 && c >= req.Session.CostUSD {
			res.Metadata["cost_usd"] = c - req.Session.CostUSD // this run's own
		}
	}
	if e.cfg.Agent == AgentCodex {
		var s *Session
		if mode == SessionResumed {
			s = req.Session
		}
		codexOwnUsage(ctx, res.Metadata, s)
	}
	res.Metadata["session"] = mode
	if reason != "" {
		res.Metadata["session_reason"] = agentMessage(reason)
	}
	id, _ := res.Metadata["session_id"].(string)
	if home == "" || id == "" {
		return res, nil
	}
	st, note := keepSession(e.cfg.Agent, home, e.workDir(req), id)
	if note != "" {
		res.Metadata["session_kept"] = agentMessage(note)
	}
	res.Session = st
	return res, nil
}

// resume runs the attempt on session s, into res. It returns why it could
// not ("" when it did), or the error of a resumed run that failed for
// another reason (retried as any role error).
func (e *Exec) resume(ctx context.Context, req Request, s *Session, home, why string, res *Result) (string, error) {
	argv, ok, err := AgentResumeArgv(e.cfg.Agent, e.cfg.Argv, s.ID)
	switch {
	case s.Agent != e.cfg.Agent:
		return fmt.Sprintf("the previous attempt ran agent %q", s.Agent), nil
	case err != nil:
		return err.Error(), nil
	case !ok && sessionDirEnv[e.cfg.Agent] == "":
		return fmt.Sprintf("%s sessions are not resumed", e.cfg.Agent), nil
	case !ok:
		return fmt.Sprintf("%s cannot resume with this argv", e.cfg.Agent), nil
	case home == "":
		return why, nil
	case s.State == nil:
		if s.Missing != "" {
			return "session state: " + s.Missing, nil
		}
		return "no session state was kept", nil
	}
	if err := restoreSession(e.cfg.Agent, home, e.workDir(req), s.ID, s.State); err != nil {
		return "restore: " + err.Error(), nil
	}
	text := resumePrompt(req)
	r, err := e.run(ctx, req, argv, &text)
	if err != nil {
		if msg, refused := resumeRefused(e.cfg.Agent, err); refused {
			return "the CLI could not resume: " + msg, nil
		}
		return "", err
	}
	*res = r
	return "", nil
}

// sessionDirEnv names, for each agent whose sessions are kept, the
// variable that moves them out of HOME.
var sessionDirEnv = map[string]string{AgentClaudeCode: "CLAUDE_CONFIG_DIR", AgentCodex: "CODEX_HOME", AgentGemini: "GEMINI_CLI_HOME"}

// sessionHome is the task's private HOME, where the agent's session is
// kept and restored, or "" and why there is none: sessions are kept only
// in the sandbox's per-task HOME (workspaces on), never in the worker's
// own, and only where the CLI keeps them under HOME.
func (e *Exec) sessionHome(req Request) (string, string) {
	v, kept := sessionDirEnv[e.cfg.Agent]
	switch {
	case e.cfg.Sandbox == nil || req.Workspace == nil || req.Workspace.Sandbox.Home == "":
		return "", "no private HOME to keep the session in (workspaces and the sandbox are needed)"
	case !kept:
		return "", fmt.Sprintf("sessions are kept for %s, %s and %s only", AgentClaudeCode, AgentCodex, AgentGemini)
	case e.baseEnv()[v] != "":
		return "", v + " is set: the sessions are outside the private HOME"
	}
	return req.Workspace.Sandbox.Home, ""
}

// workDir is the directory the agent runs in.
func (e *Exec) workDir(req Request) string {
	if e.cfg.Dir != "" || req.Workspace == nil {
		return e.cfg.Dir
	}
	return req.Workspace.Dir
}

// render is the role's prompt: text when not nil, else the template's.
func (e *Exec) render(req Request, text *string) (string, error) {
	if text != nil {
		return *text, nil
	}
	return e.prompts.Render(e.role, promptData(req))
}

// resumePrompt is what a resumed implementer is told: the conversation
// already holds the task, the plan and its own work.
func resumePrompt(req Request) string {
	return fmt.Sprintf(`Your previous attempt was rejected; this is attempt %d of %d. Your previous attempt's work is in the working directory. Address every point of this feedback:
%s

Then demonstrate "Done when" again, and reply as before with only a JSON object, no other text and no code fence:
{"change": "<what you changed and why>", "files": ["<path of each file you changed>"], "notes": "<the commands you ran and their results; anything left open>"}`,
		req.Attempt, req.Task.MaxAttempts, req.Feedback)
}

// resumeRefused reports whether a resumed run's error is the CLI refusing
// the session (not found, unreadable), with its message.
func resumeRefused(agent string, err error) (string, bool) {
	msg := err.Error()
	var refusals []string
	switch agent {
	case AgentClaudeCode:
		refusals = []string{"No conversation found", "No messages found in session", "Failed to resume session"}
	case AgentCodex:
		// "Error: thread/resume: thread/resume failed: no rollout found
		// for thread id ...", or "... failed to read thread: ...".
		refusals = []string{"thread/resume failed"}
	case AgentGemini:
		// "Error resuming session: Invalid session identifier ...", or
		// "... No previous sessions found for this project."; or the API
		// refusing the history the CLI restored (geminiOnceAnswered).
		refusals = []string{"Error resuming session", "number of function response parts"}
	}
	for _, s := range refusals {
		if i := strings.Index(msg, s); i >= 0 {
			return msg[i:], true
		}
	}
	return "", false
}

// claudeSessionFile is where Claude Code keeps session id for a run in
// dir, relative to HOME: .claude/projects/<dir, each character other
// than a letter or digit as '-'>/<id>.jsonl.
func claudeSessionFile(dir, id string) (string, error) {
	if err := validSession(id); err != nil {
		return "", err
	}
	if real, err := filepath.EvalSymlinks(dir); err == nil {
		dir = real
	}
	proj := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, dir)
	if len(proj) > 200 {
		return "", fmt.Errorf("working directory %q is too long for the CLI's project name", dir)
	}
	return filepath.Join(".claude", "projects", proj, id+".jsonl"), nil
}

// sessionFile is where the CLI of agent keeps session id (run in dir),
// relative to the home that root opens: Claude Code's by its rule;
// Codex's rollout file of the thread as found under .codex/sessions, or,
// for a restore (create) where there is none, a new one of today;
// Gemini's in the project of dir (geminiSessionFile).
func sessionFile(agent string, root *os.Root, dir, id string, create bool) (string, error) {
	switch agent {
	case AgentClaudeCode:
		return claudeSessionFile(dir, id)
	case AgentCodex:
		rel, err := findRollout(root, id, maxRolloutWalk)
		if err != nil || rel != "" || !create {
			return rel, err
		}
		return codexRolloutFile(id, time.Now().UTC())
	case AgentGemini:
		return geminiSessionFile(root, dir, id, create)
	}
	return "", fmt.Errorf("%s sessions are not kept", agent)
}

// keepSession reads the session file of session id (run in dir) from
// home, bounded: the state, or why there is none. It reads through an
// os.Root, so a symbolic link the agent planted never makes it read a
// file outside home.
func keepSession(agent, home, dir, id string) (*SessionState, string) {
	root, err := os.OpenRoot(home)
	if err != nil {
		return nil, "not kept: " + err.Error()
	}
	defer func() { _ = root.Close() }() // a directory handle: its files are closed on their own
	rel, err := sessionFile(agent, root, dir, id, false)
	if err != nil {
		return nil, "not kept: " + err.Error()
	}
	if rel == "" {
		return nil, "not kept: the CLI wrote no session file"
	}
	f, err := root.Open(rel)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, "not kept: the CLI wrote no session file"
	}
	if err != nil {
		return nil, "not kept: " + err.Error()
	}
	defer func() { _ = f.Close() }() // read only
	if fi, err := f.Stat(); err != nil || !fi.Mode().IsRegular() {
		return nil, "not kept: the session file is not a regular file"
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxSessionBytes+1))
	if err != nil {
		return nil, "not kept: " + err.Error()
	}
	if len(data) > MaxSessionBytes {
		return nil, fmt.Sprintf("not kept: the session file exceeds %d bytes", MaxSessionBytes)
	}
	return &SessionState{Agent: agent, ID: id, Data: data}, ""
}

// restoreSession writes a kept session's state into home, where the CLI
// run in dir looks for session id, through an os.Root (no symbolic link
// leads it out of home), replacing what is there.
func restoreSession(agent, home, dir, id string, data []byte) error {
	if len(data) > MaxSessionBytes {
		return fmt.Errorf("the session state exceeds %d bytes", MaxSessionBytes)
	}
	if err := os.MkdirAll(home, 0o700); err != nil {
		return err
	}
	root, err := os.OpenRoot(home)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }() // a directory handle: its files are closed on their own
	rel, err := sessionFile(agent, root, dir, id, true)
	if err != nil {
		return err
	}
	if err := root.MkdirAll(filepath.Dir(rel), 0o700); err != nil {
		return err
	}
	_ = root.Remove(rel) // a link or anything else the agent left there
	if agent == AgentGemini {
		data = geminiOnceAnswered(data)
	}
	return root.WriteFile(rel, data, 0o600)
}
