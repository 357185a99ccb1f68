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
