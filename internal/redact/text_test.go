package redact

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
)

func TestCut(t *testing.T) {
	tests := []struct {
		name string
		s    string
		n    int
		want string
	}{
		{"short", "abc", 5, "abc"},
		{"exact", "abc", 3, "abc"},
		{"ascii", "abcdef", 3, "abc"},
		{"mid two-byte rune", "aéb", 2, "a"},
		{"after two-byte rune", "aéb", 3, "aé"},
		{"mid four-byte rune", "a😀", 3, "a"},
		{"zero", "abc", 0, ""},
		{"negative", "abc", -1, ""},
		{"only a rune, cut inside", "😀", 2, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Cut(tc.s, tc.n)
			assert.Equal(t, tc.want, got)
			assert.True(t, utf8.ValidString(got))
		})
	}
}

func TestClip(t *testing.T) {
	tests := []struct {
		name, s string
		n       int
		mark    string
		want    string
	}{
		{"fits", "hello", 5, "…", "hello"},
		{"cut with mark", "hello", 3, " [truncated]", "hel [truncated]"},
		{"never mid-rune", "ab€cd", 3, "...", "ab..."},
		{"empty mark", "ab€cd", 4, "", "ab"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := Clip(tc.s, tc.n, tc.mark)
			assert.Equal(t, tc.want, got)
			assert.True(t, utf8.ValidString(got))
			assert.LessOrEqual(t, len(got), tc.n+len(tc.mark))
		})
	}
}

func TestClipRunes(t *testing.T) {
	tests := []struct {
		name, s string
		n       int
		want    string
	}{
		{"fits", "héllo", 5, "héllo"},
		{"cut", "héllo world", 5, "héll…"},
		{"runes not bytes", strings.Repeat("é", 10), 4, "ééé…"},
		{"one", "abc", 1, "…"},
		{"zero", "abc", 0, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := ClipRunes(tc.s, tc.n)
			assert.Equal(t, tc.want, got)
			assert.LessOrEqual(t, utf8.RuneCountInString(got), max(tc.n, 0))
		})
	}
}

func TestOneLineAndFirstLine(t *testing.T) {
	assert.Equal(t, "a b c", OneLine("  a\n\tb \r\n c  "))
	assert.Empty(t, OneLine(" \n "))
	assert.Equal(t, "first", FirstLine("first\nsecond"))
	assert.Equal(t, "first", FirstLine("first\r\nsecond"))
	assert.Equal(t, "only", FirstLine("only"))
}
