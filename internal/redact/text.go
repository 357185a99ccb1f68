package redact

import (
	"strings"
	"unicode/utf8"
)

// Cut is the longest prefix of s of at most n bytes that ends at a rune
// boundary, so a cut never splits a UTF-8 sequence. n below 0 counts as 0.
func Cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	n = max(n, 0)
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// Clip bounds untrusted text in bytes: s when it has at most n bytes,
// otherwise Cut(s, n) followed by mark, which says the text was cut (so the
// result has at most n+len(mark) bytes).
func Clip(s string, n int, mark string) string {
	if len(s) <= n {
		return s
	}
	return Cut(s, n) + mark
}

// ClipRunes bounds text shown in a table cell or a line: s when it has at
// most n runes, otherwise its first n-1 runes and "…" (n runes in all).
func ClipRunes(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	if n < 1 {
		return ""
	}
	i, k := 0, 0
	for k < n-1 {
		_, size := utf8.DecodeRuneInString(s[i:])
		i += size
		k++
	}
	return s[:i] + "…"
}

// OneLine collapses every run of white space, line breaks included, into
// one space and trims both ends.
func OneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// FirstLine is s up to its first line break ("\n" or "\r").
func FirstLine(s string) string {
	if i := strings.IndexAny(s, "\r\n"); i >= 0 {
		return s[:i]
	}
	return s
}
