package runner

import (
	"encoding/json"

	"github.com/droverhq/drover/subjects"
)

// EncodeResult encodes r as json.Marshal does, byte for byte: the cache
// stores every role's result this way, and a result with no metadata and
// an output already in json.Marshal's form is written without reflection.
func EncodeResult(r Result) ([]byte, error) {
	if len(r.Metadata) > 0 {
		return json.Marshal(r)
	}
	b := make([]byte, 0, len(`{"output":,"action":"","reasoning":""}`)+len(r.Output)+len(r.Action)+len(r.Reasoning)+8)
	b = append(b, `{"output":`...)
	b, ok := subjects.AppendRawJSON(b, r.Output)
	if !ok {
		return json.Marshal(r)
	}
	b = append(b, `,"action":`...)
	b = subjects.AppendJSONString(b, r.Action)
	b = append(b, `,"reasoning":`...)
	b = subjects.AppendJSONString(b, r.Reasoning)
	return append(b, '}'), nil
}
