package console

import (
	"encoding/json"
	"strings"
)

// maxDiffLines bounds the lines of a diff the console renders.
const maxDiffLines = 5000

// DiffLine is one line of a unified diff with its class.
type DiffLine struct {
	Class string // "file", "hunk", "add", "del" or "ctx"
	Text  string
}

// Highlight splits a unified diff into classed lines, at most
// maxDiffLines (truncated reports whether there were more). The text stays
// text: the template escapes it.
func Highlight(diff string) (lines []DiffLine, truncated bool) {
	if diff == "" {
		return nil, false
	}
	for i, l := range strings.Split(strings.TrimRight(diff, "\n"), "\n") {
		if i == maxDiffLines {
			return lines, true
		}
		c := "ctx"
		switch {
		case strings.HasPrefix(l, "diff "), strings.HasPrefix(l, "+++ "), strings.HasPrefix(l, "--- "),
			strings.HasPrefix(l, "index "), strings.HasPrefix(l, "new file"), strings.HasPrefix(l, "deleted file"):
			c = "file"
		case strings.HasPrefix(l, "@@"):
			c = "hunk"
		case strings.HasPrefix(l, "+"):
			c = "add"
		case strings.HasPrefix(l, "-"):
			c = "del"
		}
		lines = append(lines, DiffLine{Class: c, Text: l})
	}
	return lines, false
}

// diffKeys are the fields of an event's output (or metadata) that may hold
// a workspace's diff.
var diffKeys = []string{"patch", "diff", "change"}

// findDiff returns the first field of raw (a JSON object), searched one
// level into nested objects, named in diffKeys whose value is a string that
// looks like a unified diff.
func findDiff(raw json.RawMessage) string {
	var m map[string]json.RawMessage
	if json.Unmarshal(raw, &m) != nil {
		return ""
	}
	for _, k := range diffKeys {
		var s string
		if json.Unmarshal(m[k], &s) == nil && looksLikeDiff(s) {
			return s
		}
	}
	for _, k := range diffKeys {
		if d := findDiff(m[k]); d != "" {
			return d
		}
	}
	return ""
}

// looksLikeDiff reports whether s is a unified diff.
func looksLikeDiff(s string) bool {
	return strings.HasPrefix(s, "diff --git ") || strings.HasPrefix(s, "--- ") || strings.Contains(s, "\n@@ ")
}
