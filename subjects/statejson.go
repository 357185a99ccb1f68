package subjects

import (
	"encoding/base64"
	"encoding/json"
	"slices"
	"strconv"
	"time"
)

// MarshalTaskState encodes st exactly as json.Marshal does, byte for byte,
// without reflection: every task writes its state at least twice, each
// time with its outbox.
//
// A nil state, a state with a workspace or a review record, a request or
// result that is not already what json.Marshal would write
// (canonicalJSON), or a time json.Marshal refuses goes to json.Marshal,
// so the bytes and the errors are its own.
func MarshalTaskState(st *TaskState) ([]byte, error) { return AppendTaskState(nil, st) }

// AppendTaskState is MarshalTaskState appending to dst, which it grows to
// the state's size at most once: a writer that keeps its buffer encodes
// every state into the same memory.
func AppendTaskState(dst []byte, st *TaskState) ([]byte, error) {
	if b, ok := appendTaskState(dst, st); ok {
		return b, nil
	}
	b, err := json.Marshal(st)
	if err != nil {
		return nil, err
	}
	return append(dst, b...), nil
}

// appendTaskState is AppendTaskState without the fallback: false when st
// is one json.Marshal must write.
func appendTaskState(dst []byte, st *TaskState) ([]byte, bool) {
	if st == nil || st.Workspace != nil || st.Review != nil ||
		len(st.Request) > 0 && !canonicalJSON(st.Request) || len(st.Result) > 0 && !canonicalJSON(st.Result) {
		return nil, false
	}
	n := stateJSONFixed + len(st.Workflow) + len(st.Task) + len(st.State) + len(st.Stage) + len(st.Request) + len(st.Worker) +
		len(st.Queue) + len(st.Type) + len(st.Feedback) + len(st.Reason) + len(st.Result)
	for _, it := range st.Outbox {
		n += outboxItemFixed
		if ev := it.Event; ev != nil {
			n += len(ev.ID) + len(ev.Workflow) + len(ev.Task) + len(ev.Actor) + len(ev.Type) + base64.StdEncoding.EncodedLen(len(ev.Body))
		}
		if d := it.DLQ; d != nil {
			n += len(d.Reason) + len(d.Error)
		}
	}
	b := slices.Grow(dst, n)
	b = append(b, `{"workflow":`...)
	b = appendJSONString(b, st.Workflow)
	b = append(b, `,"task":`...)
	b = appendJSONString(b, st.Task)
	b = append(b, `,"state":`...)
	b = appendJSONString(b, st.State)
	b = append(b, `,"stage":`...)
	b = appendJSONString(b, st.Stage)
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(st.Attempt), 10)
	if len(st.Outputs) > 0 {
		b = append(b, `,"outputs":`...)
		b = appendRoleMap(b, st.Outputs, appendJSONString)
	}
	if len(st.Request) > 0 {
		b = append(b, `,"request":`...)
		b = append(b, st.Request...)
	}
	b = append(b, `,"updated_at":`...)
	b, ok := appendJSONTime(b, st.UpdatedAt)
	if !ok {
		return nil, false
	}
	b = append(b, `,"worker":`...)
	b = appendJSONString(b, st.Worker)
	b = appendOmitString(b, `,"queue":`, st.Queue)
	b = appendOmitUint(b, `,"stream_seq":`, st.StreamSeq)
	b = appendOmitUint(b, `,"delivery":`, st.Delivery)
	b = appendOmitString(b, `,"type":`, st.Type)
	if len(st.Tries) > 0 {
		b = append(b, `,"tries":`...)
		b = appendRoleMap(b, st.Tries, func(b []byte, n int) []byte { return strconv.AppendInt(b, int64(n), 10) })
	}
	b = appendOmitUint(b, `,"try_base":`, st.TryBase)
	b = appendOmitUint(b, `,"retry_from":`, st.RetryFrom)
	b = appendOmitString(b, `,"feedback":`, st.Feedback)
	b = appendOmitString(b, `,"reason":`, string(st.Reason))
	if len(st.Result) > 0 {
		b = append(b, `,"result":`...)
		b = append(b, st.Result...)
	}
	b = append(b, `,"started_at":`...)
	if b, ok = appendJSONTime(b, st.StartedAt); !ok {
		return nil, false
	}
	if len(st.Outbox) > 0 {
		b = append(b, `,"outbox":[`...)
		for i, it := range st.Outbox {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendOutboxItem(b, it); !ok {
				return nil, false
			}
		}
		b = append(b, ']')
	}
	return append(b, '}'), true
}

// stateJSONFixed is a state's JSON less its strings, raw fields and
// outbox; outboxItemFixed is an outbox item's less its strings and body.
const (
	stateJSONFixed  = 512
	outboxItemFixed = 160
)

// appendOutboxItem appends it as json.Marshal writes it; false when a
// time is one json.Marshal refuses.
func appendOutboxItem(b []byte, it OutboxItem) ([]byte, bool) {
	b = append(b, '{')
	if ev := it.Event; ev != nil {
		b = append(b, `"event":{"id":`...)
		b = appendJSONString(b, ev.ID)
		b = append(b, `,"workflow":`...)
		b = appendJSONString(b, ev.Workflow)
		b = append(b, `,"task":`...)
		b = appendJSONString(b, ev.Task)
		b = append(b, `,"actor":`...)
		b = appendJSONString(b, string(ev.Actor))
		b = append(b, `,"type":`...)
		b = appendJSONString(b, string(ev.Type))
		b = append(b, `,"time":`...)
		var ok bool
		if b, ok = appendJSONTime(b, ev.Time); !ok {
			return b, false
		}
		b = append(b, `,"body":`...)
		if ev.Body == nil {
			b = append(b, "null"...)
		} else {
			b = append(b, '"')
			b = base64.StdEncoding.AppendEncode(b, ev.Body)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	if d := it.DLQ; d != nil {
		if it.Event != nil {
			b = append(b, ',')
		}
		b = append(b, `"dlq":{"reason":`...)
		b = appendJSONString(b, string(d.Reason))
		b = append(b, `,"error":`...)
		b = appendJSONString(b, d.Error)
		b = append(b, '}')
	}
	return append(b, '}'), true
}

// appendRoleMap appends m as json.Marshal writes a map: keys sorted.
func appendRoleMap[V any](b []byte, m map[Role]V, value func([]byte, V) []byte) []byte {
	keys := make([]Role, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	b = append(b, '{')
	for i, k := range keys {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendJSONString(b, string(k))
		b = append(b, ':')
		b = value(b, m[k])
	}
	return append(b, '}')
}

// appendJSONTime appends t as json.Marshal writes a time; false when it
// refuses t (a year outside 0-9999, or a zone offset of 24 hours or more).
func appendJSONTime(b []byte, t time.Time) ([]byte, bool) {
	b = append(b, '"')
	b, err := t.AppendText(b)
	if err != nil {
		return b, false
	}
	return append(b, '"'), true
}

// appendOmitString appends key and s unless s is empty (omitempty).
func appendOmitString(b []byte, key, s string) []byte {
	if s == "" {
		return b
	}
	return appendJSONString(append(b, key...), s)
}

// appendOmitUint appends key and n unless n is 0 (omitempty).
func appendOmitUint(b []byte, key string, n uint64) []byte {
	if n == 0 {
		return b
	}
	return strconv.AppendUint(append(b, key...), n, 10)
}
