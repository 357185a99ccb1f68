package workflow

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestValidateActor(t *testing.T) {
	for _, tc := range []struct {
		actor string
		ok    bool
	}{
		{"", true},
		{"console:ann", true},
		{"console:zoë", true},
		{strings.Repeat("a", MaxActorBytes), true},
		{strings.Repeat("a", MaxActorBytes+1), false},
		{"console:ann\nforged line", false},
		{"console:\x1b[31mred", false},
		{"bad \xff utf-8", false},
	} {
		err := ValidateActor(tc.actor)
		if tc.ok {
			assert.NoError(t, err, "%q", tc.actor)
		} else {
			assert.Error(t, err, "%q", tc.actor)
		}
	}
}
