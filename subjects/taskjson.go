package subjects

import (
	"encoding/json"
	"maps"
	"slices"
	"strconv"
)

// EncodeTask encodes r as json.Marshal does, byte for byte: a producer
// publishes every request this way, and a worker records it again as its
// task_accepted event's input. A request whose metadata values are all in
// the form json.Marshal writes (compact, valid, HTML characters escaped)
// is written without reflection.
func EncodeTask(r *TaskRequest) ([]byte, error) {
	n := taskJSONFixed + len(r.ID) + len(r.Workflow) + len(r.Scope) + len(r.Verification) + len(r.Type) + len(r.Branch) + len(r.Review)
	for k, v := range r.Metadata {
		n += len(k) + len(v) + 4
	}
	b := make([]byte, 0, n)
	b = append(b, `{"id":`...)
	b = appendJSONString(b, r.ID)
	b = append(b, `,"workflow":`...)
	b = appendJSONString(b, r.Workflow)
	b = append(b, `,"scope":`...)
	b = appendJSONString(b, r.Scope)
	b = appendOmitString(b, `,"verification":`, r.Verification)
	b = appendOmitString(b, `,"type":`, r.Type)
	if r.MaxAttempts != 0 {
		b = append(b, `,"max_attempts":`...)
		b = strconv.AppendInt(b, int64(r.MaxAttempts), 10)
	}
	b = appendOmitString(b, `,"branch":`, r.Branch)
	b = appendOmitString(b, `,"review":`, r.Review)
	if len(r.Metadata) > 0 {
		b = append(b, `,"metadata":{`...)
		for i, k := range slices.Sorted(maps.Keys(r.Metadata)) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, k)
			b = append(b, ':')
			var ok bool
			if b, ok = AppendRawJSON(b, r.Metadata[k]); !ok {
				return json.Marshal(r)
			}
		}
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// taskJSONFixed is the length of a request's JSON without its values.
const taskJSONFixed = len(`{"id":"","workflow":"","scope":"","verification":"","type":"","max_attempts":-9223372036854775808,"branch":"","review":"","metadata":{}}`)
