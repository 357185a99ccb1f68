package subjects

import "time"

// Live activity: what an agent says and does while its role runs, one
// LiveLine a message on "<prefix>.live.<wf token>.<task token>" in the
// <PREFIX>_LIVE stream, which keeps them for a while (its limits) and no
// longer. The audit stream stays the permanent record of results.

// LiveKind is what a live line shows.
type LiveKind string

// The live line kinds.
const (
	// LiveMessage is the agent's own text (an assistant message).
	LiveMessage LiveKind = "message"
	// LiveToolCall is a tool the agent called, with a summary of its input.
	LiveToolCall LiveKind = "tool_call"
	// LiveToolResult is a summary of a tool call's result.
	LiveToolResult LiveKind = "tool_result"
	// LiveStdout is a line of a plain exec agent's stdout (or a preset's
	// line that is not one of its events).
	LiveStdout LiveKind = "stdout"
)

// MaxLiveText bounds a live line's text, in bytes; a longer text is cut at
// a rune boundary and ends in "…".
const MaxLiveText = 4 << 10

// LiveLine is one line of a task's live activity. Text is redacted (the
// worker's configured secrets are masked), its control characters but
// newline and tab are written as Go escapes (\x1b), and it is at most
// MaxLiveText bytes: a reader prints it to a terminal as it is, and a page
// shows it as text, escaping it as it escapes any text.
type LiveLine struct {
	Workflow string   `json:"workflow"`
	Task     string   `json:"task"`
	Role     Role     `json:"role"`
	Attempt  int      `json:"attempt"`
	Try      int      `json:"try"`
	Worker   string   `json:"worker"`
	Seq      uint64   `json:"seq"` // per role run, from 1
	Kind     LiveKind `json:"kind"`
	// Tool names the tool of a tool_call (and of a tool_result when known).
	Tool string `json:"tool,omitempty"`
	Text string `json:"text"`
	// Dropped counts the lines of this role run not published before this
	// one (over its bounds, or the worker fell behind).
	Dropped uint64    `json:"dropped,omitempty"`
	Time    time.Time `json:"time"`
}

// LiveStream is the stream of live activity, "DROVER_LIVE".
func (n Names) LiveStream() string { return n.upper + "_LIVE" }

// LiveSubject is where one task's live lines are published:
// "<prefix>.live.<wf token>.<task token>".
func (n Names) LiveSubject(workflow, task string) string {
	return n.prefix + ".live." + IDToken(workflow) + "." + IDToken(task)
}

// LiveWildcard matches every task's live subject: the live stream's
// subject.
func (n Names) LiveWildcard() string { return n.prefix + ".live.*.*" }
