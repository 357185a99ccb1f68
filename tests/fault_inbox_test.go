package tests

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// Row 23, inboxes: with deploy/nats/profiles.conf each profile may
// subscribe to its own inboxes only (drover's default inbox prefix is
// "_INBOX_<user>"), so no client can read the replies another gets: a
// producer cannot see the tasks a worker fetches, a worker cannot see a
// producer's PubAcks. nats' shared "_INBOX.>" is refused to all.
func TestPermissionInboxesArePrivate(t *testing.T) {
	t.Parallel()
	s := startPermServer(t)
	users := []string{"producer", "worker", "investigator"}
	conns := map[string]*permConn{}
	for _, u := range users {
		conns[u] = s.connect(t, u)
	}
	for _, u := range users {
		c := conns[u]
		// Its own inbox works: a request through JetStream gets its reply.
		_, err := c.js.AccountInfo(t.Context())
		require.NoError(t, err, "%s: a reply on its own inbox", u)
		require.Regexp(t, `^_INBOX_`+u+`\.`, c.nc.NewInbox())
		forbidden := []string{"_INBOX.>"}
		for _, other := range users {
			if other != u {
				forbidden = append(forbidden, "_INBOX_"+other+".>")
			}
		}
		for _, subj := range forbidden {
			sub, err := c.nc.SubscribeSync(subj)
			require.NoError(t, err)
			select {
			case err := <-c.violations:
				require.ErrorContains(t, err, subj, "%s subscribing to %s", u, subj)
			case <-time.After(10 * time.Second):
				t.Fatalf("%s may subscribe to %s", u, subj)
			}
			_ = sub.Unsubscribe()
		}
	}
}
