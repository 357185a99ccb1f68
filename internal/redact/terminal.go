package redact

import (
	"fmt"
	"strings"
	"unicode/utf8"
)

// Terminal makes untrusted text safe to print on a terminal. Every C0
// control character but newline and tab, DEL, every C1 control character
// and the bidirectional overrides and isolates (U+202A-U+202E,
// U+2066-U+2069) are written as Go escapes (\x1b, \u202e), so an escape
// sequence shows as text instead of moving the cursor, recolouring or
// rewriting the screen, or reordering what follows. Invalid UTF-8 becomes
// U+FFFD. Text with nothing to escape is returned as is.
func Terminal(s string) string {
	i := 0
	for i < len(s) {
		r, n := utf8.DecodeRuneInString(s[i:])
		if unsafeRune(r, n) {
			break
		}
		i += n
	}
	if i == len(s) {
		return s
	}
	var b strings.Builder
	b.Grow(len(s) + 16)
	b.WriteString(s[:i])
	for _, r := range s[i:] { // ranging turns invalid bytes into U+FFFD
		switch {
		case r == utf8.RuneError:
			b.WriteRune(r)
		case r < 0x100 && unsafeRune(r, 1):
			fmt.Fprintf(&b, `\x%02x`, r)
		case unsafeRune(r, 1):
			fmt.Fprintf(&b, `\u%04x`, r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// unsafeRune reports whether r (n bytes long) must be escaped: a Control
// rune or an invalid byte.
func unsafeRune(r rune, n int) bool {
	return r == utf8.RuneError && n <= 1 || Control(r)
}

// Control reports whether r is a control character but '\n' and '\t', or
// a bidi control: a rune untrusted text must not bring to a terminal or a
// rendered page as it is.
func Control(r rune) bool {
	switch {
	case r == '\n' || r == '\t':
		return false
	case r < 0x20 || r == 0x7f || (r >= 0x80 && r <= 0x9f):
		return true
	case r >= 0x202a && r <= 0x202e, r >= 0x2066 && r <= 0x2069:
		return true
	}
	return false
}
