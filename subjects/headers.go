package subjects

// Header names of contract version 1. NATS headers are case-sensitive on the
// wire: write them exactly as here.
const (
	HeaderContract    = "Drover-Contract"
	HeaderReason      = "Drover-Reason"
	HeaderError       = "Drover-Error"
	HeaderWorkflow    = "Drover-Workflow"
	HeaderTask        = "Drover-Task"
	HeaderStreamSeq   = "Drover-Stream-Seq"
	HeaderDeliveries  = "Drover-Deliveries"
	HeaderMsgID       = "Nats-Msg-Id"
	HeaderTraceparent = "traceparent"

	// CloudEvents attributes, binary content mode.
	HeaderCESpecVersion = "ce-specversion"
	HeaderCEID          = "ce-id"
	HeaderCESource      = "ce-source"
	HeaderCEType        = "ce-type"
	HeaderCETime        = "ce-time"
	HeaderCESubject     = "ce-subject"
	HeaderCEContentType = "ce-datacontenttype"
)

// Reason is why a request went to the dead-letter stream: a DLQ entry's
// Drover-Reason header, and the action of its task_failed or task_rejected
// event.
type Reason string

// The DLQ reasons of contract version 1.
const (
	ReasonInvalidJSON       Reason = "invalid_json"
	ReasonMissingField      Reason = "missing_field"
	ReasonInvalidValue      Reason = "invalid_value"
	ReasonTooLarge          Reason = "too_large"
	ReasonDuplicateID       Reason = "duplicate_id"
	ReasonWorkflowCancelled Reason = "workflow_cancelled"
	ReasonMaxAttempts       Reason = "max_attempts"
	ReasonMaxDeliveries     Reason = "max_deliveries"
	ReasonRoleFailed        Reason = "role_failed"
	// ReasonBudgetExceeded: the task spent its budget (or its next role
	// would take it over); it is never retried.
	ReasonBudgetExceeded Reason = "budget_exceeded"
	// ReasonPushRejected: the remote refused the approved task's branch
	// (workspaces with push on); the branch is kept in the worker's mirror.
	ReasonPushRejected Reason = "push_rejected"
	// ReasonPRFailed: the forge refused the approved task's pull request
	// (delivery pull_request): a 422 such as no commits between the
	// branches, or a token it does not accept (401, 403). The branch is
	// pushed.
	ReasonPRFailed Reason = "pr_failed"
)

// Reasons lists every DLQ reason.
var Reasons = []Reason{
	ReasonInvalidJSON, ReasonMissingField, ReasonInvalidValue, ReasonTooLarge,
	ReasonDuplicateID, ReasonWorkflowCancelled, ReasonMaxAttempts, ReasonMaxDeliveries,
	ReasonRoleFailed, ReasonBudgetExceeded, ReasonPushRejected, ReasonReviewExpired, ReasonPRFailed,
}

// MaxTraceparentLen bounds the traceparent header Drover reads: version 00
// is exactly 55 characters; later versions may append fields, so a little
// more is accepted, never an unbounded value.
const MaxTraceparentLen = 128

// ValidTraceparent reports whether s is a W3C trace context traceparent
// header Drover carries on: "<version>-<trace-id>-<parent-id>-<flags>" in
// lower-case hex, version 2 digits and not "ff", trace-id 32 digits and
// parent-id 16 digits, neither all zeros, flags 2 digits. Version 00 has
// exactly these four fields; a later version may append more after a dash.
// Anything else, or longer than MaxTraceparentLen, is not carried.
func ValidTraceparent(s string) bool {
	if len(s) < 55 || len(s) > MaxTraceparentLen {
		return false
	}
	version, trace, parent, flags := s[0:2], s[3:35], s[36:52], s[53:55]
	if s[2] != '-' || s[35] != '-' || s[52] != '-' {
		return false
	}
	if !lowerHex(version) || version == "ff" || !lowerHex(trace) || !lowerHex(parent) || !lowerHex(flags) {
		return false
	}
	if allZero(trace) || allZero(parent) {
		return false
	}
	if len(s) == 55 {
		return true
	}
	// Version 00 has nothing after the flags; a later one may, after a dash.
	return version != "00" && s[55] == '-'
}

func lowerHex(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < '0' || c > '9') && (c < 'a' || c > 'f') {
			return false
		}
	}
	return true
}

func allZero(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}

// HeaderBodyBytes is set on a DLQ entry whose body is only the first bytes
// of the request (a too_large request near the server's max_payload, whose
// copy with Drover's headers would not fit): the request's full size.
const HeaderBodyBytes = "Drover-Body-Bytes"

// HeaderRetry marks a request re-published by a retry: the task state's
// revision whose write scheduled it. Only a request carrying the state's
// current revision takes the task over; one with an older revision is
// acked without running.
const HeaderRetry = "Drover-Retry"

// HeaderPrev is an audit event's link in its task's hash chain: the hex
// SHA-256 of the task's previous event (see audit.Link), empty on the
// task's first event.
const HeaderPrev = "Drover-Prev"
