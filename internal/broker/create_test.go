package broker

import (
	"strings"
	"testing"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/stretchr/testify/require"
)

// Creating the account's only stream right after deleting it races the
// server's background removal of the emptied stream directory, and the
// server answers "error creating store for stream" now and then.
// CreateStream rides that out: the test deletes and creates until the
// server has logged a failed create (a few hundred to a few thousand rounds
// here), and no create may fail. Should the race not show, nothing was
// proven and the test says so by skipping.
func TestCreateStreamRidesOutTheStoreDirectoryRace(t *testing.T) {
	t.Parallel()
	skipShort(t)
	log, buf := newLog()
	e, err := StartEmbedded(EmbeddedConfig{Listen: "127.0.0.1:0", DataDir: t.TempDir(), Logger: log})
	require.NoError(t, err)
	t.Cleanup(e.Shutdown)
	js := connectJS(t, e)
	ctx := testCtx(t)
	cfg := jetstream.StreamConfig{Name: "ONLY", Subjects: []string{"only"}, Storage: jetstream.FileStorage}
	hits := func() int { return strings.Count(buf.String(), "Stream create failed") }
	rounds := 0
	for ; rounds < 10000 && hits() == 0; rounds++ {
		_, err := CreateStream(ctx, js, cfg)
		require.NoError(t, err, "round %d", rounds)
		require.NoError(t, js.DeleteStream(ctx, cfg.Name))
	}
	t.Logf("the server refused %d creates in %d rounds", hits(), rounds)
	if hits() == 0 {
		t.Skipf("the race did not show in %d rounds", rounds)
	}
}
