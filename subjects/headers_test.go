package subjects_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/droverhq/drover/subjects"
)

func TestValidTraceparent(t *testing.T) {
	t.Parallel()
	const (
		trace  = "4bf92f3577b34da6a3ce929d0e0e4736"
		parent = "00f067aa0ba902b7"
	)
	for _, tc := range []struct {
		name string
		in   string
		want bool
	}{
		{"version 00, sampled", "00-" + trace + "-" + parent + "-01", true},
		{"version 00, not sampled", "00-" + trace + "-" + parent + "-00", true},
		{"later version with more fields", "01-" + trace + "-" + parent + "-01-extra", true},
		{"later version, exact length", "cc-" + trace + "-" + parent + "-01", true},
		{"empty", "", false},
		{"version ff", "ff-" + trace + "-" + parent + "-01", false},
		{"version 00 with more fields", "00-" + trace + "-" + parent + "-01-extra", false},
		{"later version, no dash before more", "01-" + trace + "-" + parent + "-01x", false},
		{"upper-case trace id", "00-" + strings.ToUpper(trace) + "-" + parent + "-01", false},
		{"upper-case version", "0A-" + trace + "-" + parent + "-01", false},
		{"all-zero trace id", "00-" + strings.Repeat("0", 32) + "-" + parent + "-01", false},
		{"all-zero parent id", "00-" + trace + "-" + strings.Repeat("0", 16) + "-01", false},
		{"short trace id", "00-" + trace[:31] + "-" + parent + "-01", false},
		{"long parent id", "00-" + trace + "-" + parent + "0-01", false},
		{"non-hex flags", "00-" + trace + "-" + parent + "-0g", false},
		{"one-digit flags", "00-" + trace + "-" + parent + "-1", false},
		{"underscores for dashes", "00_" + trace + "_" + parent + "_01", false},
		{"spaces around", " 00-" + trace + "-" + parent + "-01 ", false},
		{"newline injected", "00-" + trace + "-" + parent + "-01\n", false},
		{"over the length bound", "01-" + trace + "-" + parent + "-01-" + strings.Repeat("a", subjects.MaxTraceparentLen), false},
		{"non-ASCII", "00-" + trace + "-" + parent + "-0é", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, subjects.ValidTraceparent(tc.in), "%q", tc.in)
		})
	}
}
