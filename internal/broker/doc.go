// Package broker connects Drover to NATS JetStream: it runs the embedded
// server, opens client connections, and provisions the streams, buckets and
// consumers of the wire contract (docs/contract.md), idempotently and safely when
// many workers start at once.
//
// Every name comes from subjects.Names. The audit stream is checked, never
// changed: Provision refuses one that is weaker than the contract allows.
// The cache bucket's TTL, the duplicate windows of the task, DLQ and lessons
// streams, the lessons kept per type, and a queue consumer's settings are
// reconciled to the caller's and each change is logged.
package broker
