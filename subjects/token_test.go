package subjects_test

import (
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/droverhq/drover/subjects"
)

// tokenByte reports whether c may appear in a token: [A-Za-z0-9_=-].
func tokenByte(c byte) bool {
	return c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' ||
		c == '_' || c == '-' || c == '='
}

// anyString draws arbitrary strings: printable text, any Unicode, and raw
// bytes that are usually not valid UTF-8.
func anyString() *rapid.Generator[string] {
	return rapid.OneOf(
		rapid.String(),
		rapid.StringMatching(`[A-Za-z0-9_.*>=/ -]{0,40}`),
		rapid.Map(rapid.SliceOf(rapid.Byte()), func(b []byte) string { return string(b) }),
	)
}

func TestTokenProperties(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		id := anyString().Draw(t, "id")
		tok := subjects.Token(id)

		for i := 0; i < len(tok); i++ {
			if !tokenByte(tok[i]) {
				t.Fatalf("Token(%q) = %q holds byte 0x%02X", id, tok, tok[i])
			}
		}
		if strings.ContainsAny(tok, ".*> \t\r\n") {
			t.Fatalf("Token(%q) = %q holds a NATS special character", id, tok)
		}
		for _, r := range tok {
			if unicode.IsSpace(r) || unicode.IsControl(r) {
				t.Fatalf("Token(%q) = %q holds white space or a control character", id, tok)
			}
		}
		if !utf8.ValidString(tok) {
			t.Fatalf("Token(%q) = %q is not valid UTF-8", id, tok)
		}

		back, err := subjects.ParseToken(tok)
		if err != nil {
			t.Fatalf("ParseToken(Token(%q)) = %v", id, err)
		}
		if back != id {
			t.Fatalf("ParseToken(Token(%q)) = %q", id, back)
		}
		if tok == "" != (id == "") {
			t.Fatalf("Token(%q) = %q: empty iff the ID is empty", id, tok)
		}
	})
}

// Every string ParseToken accepts is canonical: Token gives it back.
func TestParseTokenCanonical(t *testing.T) {
	t.Parallel()
	rapid.Check(t, func(t *rapid.T) {
		tok := rapid.StringMatching(`([A-Za-z0-9_-]|=[0-9A-Fa-f]{0,2}|[.*> ]){0,20}`).Draw(t, "tok")
		id, err := subjects.ParseToken(tok)
		if err != nil {
			return
		}
		if got := subjects.Token(id); got != tok {
			t.Fatalf("ParseToken(%q) = %q, but Token of that is %q", tok, id, got)
		}
	})
}

func TestTokenExamples(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ id, tok string }{
		// From the contract.
		{"T1.1", "T1=2E1"},
		{"a/b", "a=2Fb"},
		{"a*b", "a=2Ab"},
		// Plain IDs are unchanged.
		{"board-T1", "board-T1"},
		{"_", "_"},
		{"abc_XYZ-09", "abc_XYZ-09"},
		{"", ""},
		// Everything else is escaped, byte by byte.
		{"a>b", "a=3Eb"},
		{"a b", "a=20b"},
		{"a=b", "a=3Db"},
		{"a\x00b", "a=00b"},
		{"\x7f", "=7F"},
		{"é", "=C3=A9"},
		{"\xff", "=FF"},
		{"a.*>", "a=2E=2A=3E"},
	} {
		assert.Equal(t, tc.tok, subjects.Token(tc.id), "Token(%q)", tc.id)
		back, err := subjects.ParseToken(tc.tok)
		require.NoError(t, err, "ParseToken(%q)", tc.tok)
		assert.Equal(t, tc.id, back, "ParseToken(%q)", tc.tok)
	}
}

func TestParseTokenRejectsNonCanonical(t *testing.T) {
	t.Parallel()
	for _, tok := range []string{
		"T1=2e1",  // lower-case hex
		"a=2fb",   // lower-case hex
		"=41",     // 'A' needs no escape
		"a=5Fb",   // '_' needs no escape
		"a=2Db",   // '-' needs no escape
		"a=30",    // '0' needs no escape
		"a=",      // truncated escape
		"a=2",     // truncated escape
		"=",       // truncated escape
		"a=G1",    // not hex
		"a=-1",    // not hex
		"a==3D",   // '=' starts an escape, "=3" is not one
		"T1.1",    // raw '.'
		"a*b",     // raw '*'
		"a>",      // raw '>'
		"a b",     // raw space
		"a\tb",    // raw tab
		"a/b",     // raw '/'
		"a=2Eb.c", // escaped and raw
		"\xff",    // raw non-ASCII byte
		"é",       // raw UTF-8
	} {
		_, err := subjects.ParseToken(tok)
		require.ErrorIs(t, err, subjects.ErrInvalidToken, "ParseToken(%q)", tok)
	}
}

func TestValidateID(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		id   string
		ok   bool
	}{
		{"plain", "T1", true},
		{"contract example", "T1.1", true},
		{"workflow example", "board-T1", true},
		{"punctuation", "a/b*c>d.e=f", true},
		{"unicode", "tâche-é-日本", true},
		{"one byte", "a", true},
		{"128 bytes", strings.Repeat("x", 128), true},
		{"128 bytes multibyte", strings.Repeat("é", 64), true},
		{"empty", "", false},
		{"129 bytes", strings.Repeat("x", 129), false},
		{"129 bytes multibyte", strings.Repeat("é", 64) + "x", false},
		{"reserved", "_", false},
		{"two underscores", "__", true},
		{"space", "a b", false},
		{"leading space", " a", false},
		{"tab", "a\tb", false},
		{"newline", "a\n", false},
		{"carriage return", "a\rb", false},
		{"vertical tab", "a\vb", false},
		{"form feed", "a\fb", false},
		{"no-break space U+00A0", "a\u00a0b", false},
		{"em space U+2003", "a\u2003b", false},
		{"line separator U+2028", "a\u2028b", false},
		{"ideographic space U+3000", "a\u3000b", false},
		{"next line U+0085", "a\u0085b", false},
		{"NUL", "a\x00b", false},
		{"escape", "a\x1bb", false},
		{"DEL", "a\x7fb", false},
		{"C1 control U+009F", "a\u009fb", false},
		{"invalid UTF-8", "a\xffb", false},
		{"truncated UTF-8", "a\xc3", false},
		{"surrogate half", "a\xed\xa0\x80", false},
	} {
		err := subjects.ValidateID(tc.id)
		if tc.ok {
			assert.NoError(t, err, tc.name)
		} else {
			assert.ErrorIs(t, err, subjects.ErrInvalidID, tc.name)
		}
	}
}

func TestValidateQueue(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		q    string
		ok   bool
	}{
		{"default", subjects.DefaultQueue, true},
		{"all classes", "a-z_0-9", true},
		{"underscore", "_", true},
		{"64 chars", strings.Repeat("q", 64), true},
		{"empty", "", false},
		{"65 chars", strings.Repeat("q", 65), false},
		{"upper case", "Default", false},
		{"dot", "a.b", false},
		{"star", "*", false},
		{"gt", ">", false},
		{"space", "a b", false},
		{"no-break space", "a\u00a0b", false},
		{"em space", "a\u2003b", false},
		{"tab", "a\tb", false},
		{"control", "a\x00", false},
		{"non-ASCII letter", "é", false},
		{"invalid UTF-8", "a\xff", false},
	} {
		err := subjects.ValidateQueue(tc.q)
		if tc.ok {
			assert.NoError(t, err, tc.name)
		} else {
			assert.ErrorIs(t, err, subjects.ErrInvalidQueue, tc.name)
		}
	}
}
