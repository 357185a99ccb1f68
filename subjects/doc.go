// Package subjects is Drover's wire contract in Go: the names of subjects,
// streams, buckets and consumers, the token escaping of IDs, event IDs, the
// message types (task request, audit event, DLQ headers, task and workflow
// state) and the strict decoding of task requests.
//
// It imports nothing else of Drover's, so a producer written in Go can depend
// on it alone. The normative text is docs/contract.md (contract version 1);
// this package follows it exactly.
package subjects

// ContractVersion is the wire contract version carried in the Drover-Contract
// header of every audit event and DLQ entry.
const ContractVersion = "1"
