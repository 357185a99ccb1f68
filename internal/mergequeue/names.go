package mergequeue

import (
	"strings"

	"github.com/droverhq/drover/subjects"
)

// Names are the NATS names of the merge queue of one deployment.
type Names struct{ prefix string }

// NewNames returns the merge queue's names under n's prefix.
func NewNames(n subjects.Names) Names { return Names{prefix: n.Prefix()} }

// Stream is the work-queue stream of waiting entries, "<PREFIX>_MERGE".
func (n Names) Stream() string { return strings.ToUpper(n.prefix) + "_MERGE" }

// Subject is where entries for target wait: "<prefix>.merge.<target token>".
func (n Names) Subject(target string) string { return n.prefix + ".merge." + subjects.Token(target) }

// Consumer is the durable consumer of target's entries.
func (n Names) Consumer(target string) string { return n.prefix + "-merge-" + subjects.Token(target) }

// LogStream is the stream of merger sessions and batches,
// "<PREFIX>_MERGE_LOG" (limits retention).
func (n Names) LogStream() string { return strings.ToUpper(n.prefix) + "_MERGE_LOG" }

// LogSubject is where target's sessions are recorded:
// "<prefix>.merge_log.<target token>".
func (n Names) LogSubject(target string) string {
	return n.prefix + ".merge_log." + subjects.Token(target)
}

// LeaseBucket is the KV bucket holding one lease key per target,
// "<prefix>_merge_lease".
func (n Names) LeaseBucket() string { return n.prefix + "_merge_lease" }

// LeaseKey is target's key in LeaseBucket.
func LeaseKey(target string) string { return subjects.Token(target) }
