package subjects

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

// DefaultPrefix is the prefix of every name unless --prefix says otherwise.
const DefaultPrefix = "drover"

// ErrInvalidPrefix is returned by NewNames for a prefix that cannot start a
// subject, a stream name and a bucket name.
var ErrInvalidPrefix = errors.New("invalid prefix")

// Names builds every subject, stream, bucket, consumer and key name of one
// deployment. The zero value is not usable; build it with NewNames.
type Names struct {
	prefix string
	upper  string
}

// NewNames returns the names for prefix: 1 to 32 characters of [a-z0-9_-]
// starting with a letter. Subjects start with "<prefix>.", streams with the
// upper-cased "<PREFIX>_", buckets with "<prefix>_".
func NewNames(prefix string) (Names, error) {
	if prefix == "" || len(prefix) > 32 || prefix[0] < 'a' || prefix[0] > 'z' {
		return Names{}, fmt.Errorf("%w: %q must be 1 to 32 characters of [a-z0-9_-] starting with a letter", ErrInvalidPrefix, prefix)
	}
	for i := 0; i < len(prefix); i++ {
		c := prefix[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-') {
			return Names{}, fmt.Errorf("%w: %q must be 1 to 32 characters of [a-z0-9_-] starting with a letter", ErrInvalidPrefix, prefix)
		}
	}
	return Names{prefix: prefix, upper: strings.ToUpper(prefix)}, nil
}

// MustNames is NewNames for a prefix known to be valid; it panics otherwise.
func MustNames(prefix string) Names {
	n, err := NewNames(prefix)
	if err != nil {
		panic(err)
	}
	return n
}

// Prefix returns the prefix these names were built from.
func (n Names) Prefix() string { return n.prefix }

// TasksStream is the work-queue stream of task requests, "DROVER_TASKS".
func (n Names) TasksStream() string { return n.upper + "_TASKS" }

// AuditStream is the append-only audit stream, "DROVER_AUDIT".
func (n Names) AuditStream() string { return n.upper + "_AUDIT" }

// DLQStream is the dead-letter stream, "DROVER_DLQ".
func (n Names) DLQStream() string { return n.upper + "_DLQ" }

// StateBucket is the KV bucket of task and workflow state, "drover_state".
func (n Names) StateBucket() string { return n.prefix + "_state" }

// CacheBucket is the KV bucket of cached role results, "drover_cache".
func (n Names) CacheBucket() string { return n.prefix + "_cache" }

// BlobStore is the object store of large values, "drover_blobs".
func (n Names) BlobStore() string { return n.prefix + "_blobs" }

// Consumer is the durable pull consumer shared by every worker of queue,
// "drover-<queue>".
func (n Names) Consumer(queue string) string { return n.prefix + "-" + queue }

// TaskSubject is where producers publish requests for queue.
func (n Names) TaskSubject(queue string) string { return n.prefix + ".tasks." + queue }

// TasksWildcard matches every queue's task subject.
func (n Names) TasksWildcard() string { return n.prefix + ".tasks.*" }

// TaskRetrySubject is where a worker schedules the retry of one task of
// queue: a message scheduled for later (Nats-Schedule) whose target is
// TaskSubject(queue). One subject per task, so a task has at most one
// pending retry. No consumer filters it.
func (n Names) TaskRetrySubject(queue, workflow, task string) string {
	return n.prefix + ".tasks." + queue + ".retry." + IDToken(workflow) + "." + IDToken(task)
}

// TasksRetryWildcard matches every scheduled retry: the tasks stream's
// second subject.
func (n Names) TasksRetryWildcard() string { return n.prefix + ".tasks.*.retry.>" }

// DLQSubject is where dead letters of queue are kept.
func (n Names) DLQSubject(queue string) string { return n.prefix + ".dlq." + queue }

// DLQWildcard matches every queue's DLQ subject.
func (n Names) DLQWildcard() string { return n.prefix + ".dlq.*" }

// AuditWildcard matches every audit subject.
func (n Names) AuditWildcard() string { return n.prefix + ".audit.>" }

// AuditSubject is the subject of one audit event. IDs are escaped here; pass
// Reserved for a workflow-level event or an unreadable ID.
func (n Names) AuditSubject(workflow, task string, actor Actor, et EventType) string {
	return n.prefix + ".audit." + IDToken(workflow) + "." + IDToken(task) + "." + string(actor) + "." + string(et)
}

// AuditTaskFilter matches every event of one task: the filter of the
// Nats-Expected-Last-Subject-Sequence check and of a task's replay.
func (n Names) AuditTaskFilter(workflow, task string) string {
	return n.prefix + ".audit." + IDToken(workflow) + "." + IDToken(task) + ".>"
}

// AuditFilter builds a replay filter; an empty field matches anything. It is
// the narrowest subject filter for the question, so a replay's cost follows
// the size of its answer.
func (n Names) AuditFilter(workflow, task string, actor Actor, et EventType) string {
	parts := []string{n.prefix, "audit", "*", "*", "*", "*"}
	if workflow != "" {
		parts[2] = IDToken(workflow)
	}
	if task != "" {
		parts[3] = IDToken(task)
	}
	if actor != "" {
		parts[4] = string(actor)
	}
	if et != "" {
		parts[5] = string(et)
	}
	// Trailing single-token wildcards collapse into one '>'.
	end := len(parts)
	for end > 2 && parts[end-1] == "*" {
		end--
	}
	if end == len(parts) {
		return strings.Join(parts, ".")
	}
	return strings.Join(parts[:end], ".") + ".>"
}

// CtlSubject is the request subject of a workflow control action: pause,
// resume or cancel.
func (n Names) CtlSubject(workflow, action string) string {
	return n.prefix + ".ctl.workflow." + IDToken(workflow) + "." + action
}

// CtlWildcard matches every workflow control request.
func (n Names) CtlWildcard() string { return n.prefix + ".ctl.workflow.*.*" }

// ReviewSubject is the request subject of a review decision on a task,
// "<prefix>.ctl.review.<wf token>.<task token>".
func (n Names) ReviewSubject(workflow, task string) string {
	return n.prefix + ".ctl.review." + IDToken(workflow) + "." + IDToken(task)
}

// ReviewSubjectAs is the request subject of a review decision signed by
// reviewer (an ID), "<prefix>.ctl.review.<wf token>.<task token>.<reviewer
// token>". Workers record the subject's reviewer, so a deployment binds a
// reviewer's name to their NATS user by letting that user publish only on
// "<prefix>.ctl.review.*.*.<their token>".
func (n Names) ReviewSubjectAs(workflow, task, reviewer string) string {
	return n.ReviewSubject(workflow, task) + "." + IDToken(reviewer)
}

// ReviewWildcard matches every review decision request, with or without
// the reviewer's token.
func (n Names) ReviewWildcard() string { return n.prefix + ".ctl.review.>" }

// StateKey is the drover_state key of a task, "<wf>.<task>".
func StateKey(workflow, task string) string { return IDToken(workflow) + "." + IDToken(task) }

// WorkflowKey is the drover_state key of a workflow, "<wf>._".
func WorkflowKey(workflow string) string { return IDToken(workflow) + "." + Reserved }

// CacheKey is the drover_cache key of a role result, "<role>.<sha256 hex>".
func CacheKey(role Role, sum string) string { return string(role) + "." + sum }

// EventID is an audit event's ID and Nats-Msg-Id:
// "<wf token>/<task token>/<attempt>/<actor>/<event_type>", with "/<n>"
// appended for event types that can happen more than once (n > 0).
func EventID(workflow, task string, attempt int, actor Actor, et EventType, n uint64) string {
	id := IDToken(workflow) + "/" + IDToken(task) + "/" + strconv.Itoa(attempt) + "/" + string(actor) + "/" + string(et)
	if n > 0 {
		id += "/" + strconv.FormatUint(n, 10)
	}
	return id
}

// TaskMsgID is the Nats-Msg-Id of a task request, "<wf token>/<task token>".
func TaskMsgID(workflow, task string) string { return IDToken(workflow) + "/" + IDToken(task) }

// ResumeMsgID is the Nats-Msg-Id of a request re-published by resume.
func ResumeMsgID(workflow, task string, revision uint64) string {
	return ParkedMsgID(workflow, task, "resume", revision)
}

// ParkedMsgID is the Nats-Msg-Id of a parked task's request published
// again: "<wf token>/<task token>/<kind>/<revision>", kind naming what
// sent it on (resume, review, merge, ...) and revision the state revision
// it was published from, so two publishers of one change store one message.
func ParkedMsgID(workflow, task, kind string, revision uint64) string {
	return TaskMsgID(workflow, task) + "/" + kind + "/" + strconv.FormatUint(revision, 10)
}

// RetryMsgID is the Nats-Msg-Id of a retry scheduled by the state write at
// revision (task_retried), so two workers scheduling it store one message.
func RetryMsgID(workflow, task string, revision uint64) string {
	return TaskMsgID(workflow, task) + "/retry/" + strconv.FormatUint(revision, 10)
}

// DLQMsgID is the Nats-Msg-Id of a DLQ entry, "dlq/<queue>/<stream seq>".
func DLQMsgID(queue string, streamSeq uint64) string {
	return "dlq/" + queue + "/" + strconv.FormatUint(streamSeq, 10)
}

// IDToken is the token of an ID in a subject, key or header; an empty ID
// (unknown) becomes Reserved.
func IDToken(id string) string {
	if id == "" || id == Reserved {
		return Reserved
	}
	return Token(id)
}
