// Package mergequeue is the merge queue of the `merge` delivery mode: tasks
// whose branch was approved wait in a JetStream work-queue stream, one per
// target branch, and one merger per target across the whole fleet (the
// holder of a lease key in a KV bucket whose age limit is the lease time)
// takes them in batches, merges or rebases them onto the target's current
// head in a scratch worktree, runs the check command on the result, and
// pushes the target once per batch. A batch that conflicts or fails the
// check is split in halves until the culprits are found; the rest is
// merged and each culprit's task is sent back to its implementer with the
// conflict or the check's output as feedback.
//
// Every merger session (the time one merger holds a target's lease) is
// recorded with its start and end in the merge log stream, so anyone can
// check that two sessions on one target never overlapped.
package mergequeue
