package tests

import (
	"fmt"
	"os"
	"slices"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/droverhq/drover/subjects"
)

// Row 13 (DROVER_FAULTS=full): storage rollback on a minority node. One node
// of three is stopped and its store copied; it runs on while more tasks
// complete; then it is stopped again, its store replaced by the old copy
// (a disk restored from a backup), and started. The other two hold the
// quorum and the newer record: every replica of the tasks, audit and state
// streams is current again, the next tasks complete, and O holds: no event
// lost, none duplicated, the audit stream whole from sequence 1.
func TestClusterMinorityStoreRollback(t *testing.T) {
	fullFaults(t)
	t.Parallel()
	c, b := startCluster(t)
	wa, wb := b.startClusterWorker("A"), b.startClusterWorker("B")
	const wf = "wf-rollback"
	var all []string
	batch := func(prefix string, n int) {
		var reqs []subjects.TaskRequest
		var ids []string
		for i := range n {
			ids = append(ids, fmt.Sprintf("%s%d", prefix, i))
			reqs = append(reqs, withSim(task(wf, ids[i]), `{"latency_ms": {"implementer": 20}}`))
		}
		after := b.submit(reqs...)
		requireAllCompleted(t, b.waitAll(wf, after, ids, wa, wb))
		all = append(all, ids...)
	}
	batch("A", 100)

	node := c.order[2]
	data := c.args[node][slices.Index(c.args[node], "--data")+1]
	backup := data + ".backup"
	require.NoError(t, c.nodes[node].stop(syscall.SIGTERM, 30*time.Second))
	require.NoError(t, os.CopyFS(backup, os.DirFS(data)))
	c.restart(node)
	b.waitReplicasCurrent(b.names.TasksStream(), b.names.AuditStream(), "KV_"+b.names.StateBucket())
	batch("B", 100)

	require.NoError(t, c.nodes[node].stop(syscall.SIGTERM, 30*time.Second))
	require.NoError(t, os.RemoveAll(data))
	require.NoError(t, os.Rename(backup, data))
	restored := time.Now()
	c.restart(node)
	b.waitReplicasCurrent(b.names.TasksStream(), b.names.AuditStream(), "KV_"+b.names.StateBucket())
	t.Logf("node %s restored to its older store: replicas current %s after its restart", node, time.Since(restored).Round(10*time.Millisecond))
	batch("C", 100)
	b.quiet(wf, len(all))
}
