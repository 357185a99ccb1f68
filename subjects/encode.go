package subjects

import "encoding/json"

// Requests, events and states are encoded with encoding/json. These three
// names are json.Marshal under the names internal/bench still calls; they
// go when it stops calling them.

// EncodeTask is json.Marshal(r).
func EncodeTask(r *TaskRequest) ([]byte, error) { return json.Marshal(r) }

// MarshalTaskState is json.Marshal(st).
func MarshalTaskState(st *TaskState) ([]byte, error) { return json.Marshal(st) }

// AppendJSONString appends s to dst as json.Marshal writes a string.
func AppendJSONString(dst []byte, s string) []byte {
	b, _ := json.Marshal(s) // a string always encodes
	return append(dst, b...)
}
