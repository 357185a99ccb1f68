package pipeline

import (
	"testing"

	"github.com/nats-io/nats.go"
	"github.com/stretchr/testify/assert"

	"github.com/droverhq/drover/consumers"
)

func TestTraceparentOf(t *testing.T) {
	t.Parallel()
	const valid = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"
	for _, tc := range []struct {
		name   string
		header nats.Header
		want   string
	}{
		{"none", nil, ""},
		{"valid", nats.Header{"traceparent": {valid}}, valid},
		{"valid, other case", nats.Header{"Traceparent": {valid}}, valid},
		{"invalid: dropped", nats.Header{"traceparent": {"00-zz-00f067aa0ba902b7-01"}}, ""},
		{"all-zero trace id: dropped", nats.Header{"traceparent": {"00-00000000000000000000000000000000-00f067aa0ba902b7-01"}}, ""},
		{"oversized: dropped", nats.Header{"traceparent": {valid + "-" + string(make([]byte, 4096))}}, ""},
		{"header injection: dropped", nats.Header{"traceparent": {valid + "\r\nX-Evil: 1"}}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, traceparentOf(consumers.Msg{Header: tc.header}))
		})
	}
}
