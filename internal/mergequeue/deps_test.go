package mergequeue

import (
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// New refuses a merger missing a dependency, naming the field, before it
// touches the server.
func TestNewNamesMissingDependency(t *testing.T) {
	full := Deps{JS: struct{ jetstream.JetStream }{}, Names: NewNames(subjects.MustNames(subjects.DefaultPrefix)),
		Repo: GitRepo{}, Sink: PipelineSink{}, Holder: "w1"}
	cases := []struct {
		field string
		edit  func(*Deps)
	}{
		{"Deps.JS", func(d *Deps) { d.JS = nil }},
		{"Deps.Names", func(d *Deps) { d.Names = Names{} }},
		{"Deps.Repo", func(d *Deps) { d.Repo = nil }},
		{"Deps.Sink", func(d *Deps) { d.Sink = nil }},
		{"Deps.Holder", func(d *Deps) { d.Holder = "" }},
	}
	for _, tc := range cases {
		t.Run(tc.field, func(t *testing.T) {
			d := full
			tc.edit(&d)
			_, err := New(t.Context(), d, Config{Target: "main"})
			require.ErrorContains(t, err, tc.field)
		})
	}
	require.NoError(t, full.validate())
}
