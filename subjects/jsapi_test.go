package subjects_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/droverhq/drover/subjects"
)

func TestJSAPIPrefix(t *testing.T) {
	t.Parallel()
	tests := []struct{ domain, apiPrefix, want string }{
		{"", "", "$JS.API."},
		{"hub", "", "$JS.hub.API."},
		{"hub", "$JS.other.API.", "$JS.hub.API."},
		{"", "$JS.other.API", "$JS.other.API."},
		{"", "$JS.other.API.", "$JS.other.API."},
	}
	for _, tc := range tests {
		assert.Equal(t, tc.want, subjects.JSAPIPrefix(tc.domain, tc.apiPrefix), "domain %q, prefix %q", tc.domain, tc.apiPrefix)
	}
}
