package pipeline

import (
	"strconv"
	"strings"
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

func TestFitDLQBody(t *testing.T) {
	t.Parallel()
	headers := func() nats.Header {
		h := nats.Header{}
		h.Set(subjects.HeaderReason, string(subjects.ReasonTooLarge))
		h.Set(subjects.HeaderError, strings.Repeat("e", 300))
		return h
	}
	const limit = 1 << 20
	cases := []struct {
		name      string
		body      int
		max       int64
		truncated bool
	}{
		{"small", 100, limit, false},
		{"at the application limit", subjects.DefaultMaxBodyBytes + 1, limit, false},
		{"just under max_payload", limit - 64, limit, true},
		{"at max_payload", limit, limit, true},
		{"max payload unknown", limit, 0, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h := headers()
			body := []byte(strings.Repeat("x", c.body))
			got := fitDLQBody(body, h, c.max)
			if !c.truncated {
				require.Equal(t, body, got)
				require.Empty(t, h.Get(subjects.HeaderBodyBytes))
				return
			}
			require.Less(t, len(got), c.body)
			require.Equal(t, body[:len(got)], got, "a prefix of the request")
			require.Equal(t, strconv.Itoa(c.body), h.Get(subjects.HeaderBodyBytes))
			require.LessOrEqual(t, headerBytes(h)+int64(len(got)), c.max, "the entry fits")
		})
	}
}
