package forge

import (
	"fmt"
	"strings"

	"github.com/droverhq/drover/internal/redact"
)

// Bounds of a request's text, which comes from the task and its agents
// (untrusted): each section is cut, and the whole body stays well under
// the forges' limits (GitHub: 65536 characters).
const (
	maxTitle   = 200   // runes
	maxSection = 12000 // bytes of one section's text
	maxBody    = 60000 // bytes of the whole body
)

// Task is what a pull request says about its task.
type Task struct {
	Workflow, ID string
	// Scope is the task's scope; Plan the planner's plan; Verdict the
	// judge's approving verdict (its JSON, or its feedback).
	Scope, Plan, Verdict string
	// Review is the reviewer's decision when the review gate was used
	// (who, and the comment); empty otherwise.
	Review string
	// Attempts is how many implementer attempts the task took.
	Attempts int
}

// Title is a request's title: the task's ID and the first line of its
// scope, on one line, at most 200 runes.
func Title(t Task) string {
	line := redact.OneLine(redact.FirstLine(strings.TrimSpace(t.Scope)))
	title := t.ID
	if line != "" {
		title += ": " + line
	}
	return redact.ClipRunes(strings.Map(dropControl, title), maxTitle)
}

// Body is a request's description in Markdown: the scope, plan, verdict
// and (with the review gate) the reviewer's decision, each in a code fence
// longer than any backtick run inside it, so no text an agent wrote is
// read as Markdown (no mention, link, image or HTML); the attempts; and
// the drover commands that show the task's audit trail.
func Body(t Task) string {
	var b strings.Builder
	ref := t.Workflow + "/" + t.ID
	fmt.Fprintf(&b, "Opened by Drover for task %s after the judge approved it.\n\n", Code(ref))
	section(&b, "Scope", t.Scope)
	section(&b, "Plan", t.Plan)
	section(&b, "Judge's verdict", t.Verdict)
	if t.Review != "" {
		section(&b, "Reviewer's decision", t.Review)
	}
	fmt.Fprintf(&b, "### Attempts\n\n%d\n\n", t.Attempts)
	b.WriteString("### Audit trail\n\n")
	b.WriteString(Fence(fmt.Sprintf("drover audit --workflow %s --task %s\ndrover task diff %s", shellWord(t.Workflow), shellWord(t.ID), shellWord(ref)), "sh"))
	return redact.Clip(b.String(), maxBody, "\n\n(cut)\n")
}

func section(b *strings.Builder, heading, text string) {
	text = strings.TrimSpace(text)
	if text == "" {
		text = "(none)"
	}
	fmt.Fprintf(b, "### %s\n\n%s\n", heading, Fence(redact.Clip(text, maxSection, "\n(cut)"), "text"))
}

// Fence puts text in a fenced code block whose fence is longer than any
// run of backticks in the text (at least three), so nothing inside can
// close it; lang is the info string.
func Fence(text, lang string) string {
	fence := strings.Repeat("`", max(3, longestRun(text, '`')+1))
	text = strings.Map(dropControl, text)
	return fence + lang + "\n" + strings.TrimRight(text, "\n") + "\n" + fence + "\n"
}

// Code is text as inline code (one line), with delimiters longer than any
// backtick run inside it.
func Code(text string) string {
	text = redact.OneLine(strings.Map(dropControl, text))
	ticks := strings.Repeat("`", longestRun(text, '`')+1)
	if strings.HasPrefix(text, "`") || strings.HasSuffix(text, "`") {
		text = " " + text + " "
	}
	return ticks + text + ticks
}

func longestRun(s string, c rune) int {
	best, run := 0, 0
	for _, r := range s {
		if r == c {
			run++
			best = max(best, run)
		} else {
			run = 0
		}
	}
	return best
}

// dropControl drops control characters but tab and newline (a carriage
// return would let text pose as a line of its own).
func dropControl(r rune) rune {
	if redact.Control(r) || r == '\u2028' || r == '\u2029' {
		return -1
	}
	return r
}

// shellWord quotes s for a POSIX shell when it holds anything but safe
// characters (IDs normally need no quoting).
func shellWord(s string) string {
	safe := s != "" && strings.IndexFunc(s, func(r rune) bool {
		return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || strings.ContainsRune("-_./:@+=,", r))
	}) < 0
	if safe {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
