package subjects

import (
	"encoding/json"
	"strconv"
	"unicode/utf8"
)

// MarshalEvent encodes ev exactly as json.Marshal does, byte for byte,
// without reflection: an event is encoded once per role result on every
// worker, and it is the largest body the hot path writes.
//
// Its input, output and metadata are written as they are when they are
// already what json.Marshal would write (one valid value, compact, with
// the HTML characters and U+2028/U+2029 escaped), which is what Drover's
// own encoders give; anything else, a nil event, and a timestamp
// json.Marshal refuses go to json.Marshal, so the bytes and the errors
// are its own.
func MarshalEvent(ev *AuditEvent) ([]byte, error) {
	if b, ok := appendEvent(ev); ok {
		return b, nil
	}
	return json.Marshal(ev)
}

// appendEvent is MarshalEvent without the fallback: false when ev is one
// json.Marshal must write.
func appendEvent(ev *AuditEvent) ([]byte, bool) {
	if ev == nil || !canonicalJSON(ev.Input) || !canonicalJSON(ev.Output) || !canonicalJSON(ev.Metadata) {
		return nil, false
	}
	n := eventJSONFixed + len(ev.EventID) + len(ev.EventType) + len(ev.WorkflowID) + len(ev.TaskID) + len(ev.Actor) +
		len(ev.Action) + len(ev.Reasoning) + len(ev.Input) + len(ev.Output) + len(ev.Status) + len(ev.Error) + len(ev.Worker) + len(ev.Metadata)
	b := make([]byte, 0, n)
	b = append(b, `{"event_id":`...)
	b = appendJSONString(b, ev.EventID)
	b = append(b, `,"event_type":`...)
	b = appendJSONString(b, string(ev.EventType))
	b = append(b, `,"workflow_id":`...)
	b = appendJSONString(b, ev.WorkflowID)
	b = append(b, `,"task_id":`...)
	b = appendJSONString(b, ev.TaskID)
	b = append(b, `,"actor":`...)
	b = appendJSONString(b, string(ev.Actor))
	b = append(b, `,"attempt":`...)
	b = strconv.AppendInt(b, int64(ev.Attempt), 10)
	b = append(b, `,"timestamp":`...)
	b, ok := appendJSONTime(b, ev.Timestamp)
	if !ok { // a time json.Marshal refuses: its error
		return nil, false
	}
	b = append(b, `,"action":`...)
	b = appendJSONString(b, ev.Action)
	b = append(b, `,"reasoning":`...)
	b = appendJSONString(b, ev.Reasoning)
	b = append(b, `,"input":`...)
	b = append(b, ev.Input...)
	b = append(b, `,"output":`...)
	b = append(b, ev.Output...)
	b = append(b, `,"status":`...)
	b = appendJSONString(b, ev.Status)
	b = append(b, `,"error":`...)
	b = appendJSONString(b, ev.Error)
	b = append(b, `,"cached":`...)
	b = strconv.AppendBool(b, ev.Cached)
	b = append(b, `,"duration_ms":`...)
	b = strconv.AppendInt(b, ev.DurationMS, 10)
	b = append(b, `,"worker":`...)
	b = appendJSONString(b, ev.Worker)
	b = append(b, `,"metadata":`...)
	b = append(b, ev.Metadata...)
	return append(b, '}'), true
}

// eventJSONFixed is an event's JSON less its strings and raw fields: the
// keys, quotes and punctuation, and room for the numbers and the time.
const eventJSONFixed = 256

const jsonHex = "0123456789abcdef"

// appendJSONString appends s as a JSON string the way json.Marshal writes
// one: '"', '\\' and control characters escaped (\b, \f, \n, \r and \t by
// name, the others as \u00XX), '<', '>' and '&' as \u003c, \u003e and
// \u0026, U+2028 and U+2029 as \u2028 and \u2029, and each byte of
// invalid UTF-8 as \ufffd.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if jsonSafe[c] {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\b':
				dst = append(dst, '\\', 'b')
			case '\f':
				dst = append(dst, '\\', 'f')
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', jsonHex[c>>4], jsonHex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', jsonHex[r&0xF])
		default:
			i += size
			continue
		}
		i += size
		start = i
	}
	dst = append(dst, s[start:]...)
	return append(dst, '"')
}

// canonicalMaxDepth bounds the nesting canonicalJSON follows; deeper
// values go to json.Marshal, which has a bound of its own.
const canonicalMaxDepth = 64

// canonicalJSON reports whether raw is one JSON value that json.Marshal
// writes unchanged as a json.RawMessage: valid, with no white space
// outside strings, no control character, '<', '>' or '&' in a string
// (nor anywhere else) and no U+2028 or U+2029. It may say no to a value
// json.Marshal would keep; never yes to one it would change or refuse.
func canonicalJSON(raw []byte) bool {
	s := jsonScan{b: raw, maxDepth: canonicalMaxDepth}
	return s.value(0) && s.i == len(raw)
}
