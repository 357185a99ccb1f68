package subjects

import (
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Reserved is the ID that stands for "the workflow itself" or "unknown"; it
// is never a valid workflow or task ID.
const Reserved = "_"

// MaxIDBytes is the longest workflow or task ID, in bytes.
const MaxIDBytes = 128

// DefaultQueue is the queue a task goes to when none is named.
const DefaultQueue = "default"

// ErrInvalidID is wrapped by every ID validation error.
var ErrInvalidID = errors.New("invalid id")

// ErrInvalidQueue is wrapped by every queue-name validation error.
var ErrInvalidQueue = errors.New("invalid queue name")

// ErrInvalidToken is returned by ParseToken for a string that no ID escapes to.
var ErrInvalidToken = errors.New("invalid token")

// ValidateID checks a workflow or task ID: 1 to 128 bytes of UTF-8 with no
// Unicode white space and no control characters, and not the reserved "_".
func ValidateID(id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: empty", ErrInvalidID)
	case len(id) > MaxIDBytes:
		return fmt.Errorf("%w: %d bytes, the limit is %d", ErrInvalidID, len(id), MaxIDBytes)
	case id == Reserved:
		return fmt.Errorf("%w: %q is reserved", ErrInvalidID, Reserved)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: not valid UTF-8", ErrInvalidID)
	}
	for _, r := range id {
		if unicode.IsSpace(r) || unicode.IsControl(r) {
			return fmt.Errorf("%w: contains white space or a control character (%U)", ErrInvalidID, r)
		}
	}
	return nil
}

// ValidateQueue checks a queue name: 1 to 64 characters of [a-z0-9_-].
func ValidateQueue(q string) error {
	if q == "" || len(q) > 64 {
		return fmt.Errorf("%w: %q must be 1 to 64 characters", ErrInvalidQueue, q)
	}
	for i := 0; i < len(q); i++ {
		c := q[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return fmt.Errorf("%w: %q may hold only [a-z0-9_-]", ErrInvalidQueue, q)
		}
	}
	return nil
}

func plainByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-'
}

const hexDigits = "0123456789ABCDEF"

// Token escapes an ID for use in a subject, a KV key, a header or an event
// ID: each byte outside [A-Za-z0-9_-] becomes '=' and two upper-case hex
// digits. "T1.1" becomes "T1=2E1". The result never holds '.', '*', '>',
// white space or any other character that is special to NATS.
func Token(id string) string {
	n := 0
	for i := 0; i < len(id); i++ {
		if !plainByte(id[i]) {
			n++
		}
	}
	if n == 0 {
		return id
	}
	var b strings.Builder
	b.Grow(len(id) + 2*n)
	for i := 0; i < len(id); i++ {
		c := id[i]
		if plainByte(c) {
			b.WriteByte(c)
			continue
		}
		b.WriteByte('=')
		b.WriteByte(hexDigits[c>>4])
		b.WriteByte(hexDigits[c&0xF])
	}
	return b.String()
}

// ParseToken reverses Token. It accepts only the canonical form Token
// produces (upper-case hex, escapes only where needed), so every ID has
// exactly one token.
func ParseToken(tok string) (string, error) {
	if !strings.Contains(tok, "=") {
		for i := 0; i < len(tok); i++ {
			if !plainByte(tok[i]) {
				return "", fmt.Errorf("%w: %q holds byte 0x%02X", ErrInvalidToken, tok, tok[i])
			}
		}
		return tok, nil
	}
	out := make([]byte, 0, len(tok))
	for i := 0; i < len(tok); i++ {
		c := tok[i]
		switch {
		case plainByte(c):
			out = append(out, c)
		case c == '=':
			if i+2 >= len(tok) {
				return "", fmt.Errorf("%w: %q ends inside an escape", ErrInvalidToken, tok)
			}
			hi, lo := unhex(tok[i+1]), unhex(tok[i+2])
			if hi < 0 || lo < 0 {
				return "", fmt.Errorf("%w: %q has a bad escape at byte %d", ErrInvalidToken, tok, i)
			}
			v := byte(hi<<4 | lo)
			if plainByte(v) {
				return "", fmt.Errorf("%w: %q escapes %q, which needs no escape", ErrInvalidToken, tok, v)
			}
			out = append(out, v)
			i += 2
		default:
			return "", fmt.Errorf("%w: %q holds byte 0x%02X", ErrInvalidToken, tok, c)
		}
	}
	return string(out), nil
}

func unhex(c byte) int {
	switch {
	case c >= '0' && c <= '9':
		return int(c - '0')
	case c >= 'A' && c <= 'F':
		return int(c-'A') + 10
	}
	return -1
}
