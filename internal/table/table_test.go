package table

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestDash(t *testing.T) {
	assert.Equal(t, "-", Dash(""))
	assert.Equal(t, "x", Dash("x"))
	assert.Equal(t, " ", Dash(" "))
}

func TestCell(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"empty", "", "-"},
		{"plain", "task_failed", "task_failed"},
		{"tabs and breaks", "a\tb\nc\rd", "a b c d"},
		{"escape sequence", "\x1b[2J", `\x1b[2J`},
		{"bidi override", "\u202eevil", `\u202eevil`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			assert.Equal(t, tc.want, Cell(tc.in))
		})
	}
}

func TestBytes(t *testing.T) {
	for n, want := range map[uint64]string{0: "0 B", 1023: "1023 B", 1536: "1.5 KiB", 2 << 20: "2.0 MiB", 3 << 40: "3.0 TiB"} {
		assert.Equal(t, want, Bytes(n), "Bytes(%d)", n)
	}
}
