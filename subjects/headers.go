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
)

// Reasons lists every DLQ reason.
var Reasons = []Reason{
	ReasonInvalidJSON, ReasonMissingField, ReasonInvalidValue, ReasonTooLarge,
	ReasonDuplicateID, ReasonWorkflowCancelled, ReasonMaxAttempts, ReasonMaxDeliveries,
	ReasonRoleFailed,
}
