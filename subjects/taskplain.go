package subjects

import (
	"encoding/json"
	"strconv"
)

// decodePlain reads a request from a body strictJSON accepted, when
// reading is all it takes: every key is one of the request's own, written
// without an escape; every string field is a string without an escape;
// max_attempts is a whole number from 1 to MaxMaxAttempts; metadata is an
// object whose keys have no escape and whose sim controls are valid. This
// is what producers write, and it is read in one pass without reflection.
// Anything else is not read (ok is false) and goes to decodeFields, which
// names the fault. Whatever decodePlain reads, decodeFields reads the same
// (FuzzDecodePlain).
func decodePlain(body []byte) (req TaskRequest, present taskFields, ok bool) {
	s := jsonScan{b: body, strict: true, maxDepth: len(body)} // strictJSON checked the depth
	s.space()
	if s.peek() != '{' {
		return req, present, false
	}
	if s.open('}') {
		return req, present, true
	}
	for {
		key, ok := s.plainKey()
		if !ok {
			return req, present, false
		}
		start := s.i
		isString := s.peek() == '"'
		if !s.value(1) {
			return req, present, false
		}
		raw := body[start:s.i]
		plain := isString && !s.escaped
		var dst *string
		switch string(key) {
		case "workflow":
			dst, present.workflow = &req.Workflow, true
		case "id":
			dst, present.id = &req.ID, true
		case "scope":
			dst, present.scope = &req.Scope, true
		case "verification":
			dst = &req.Verification
		case "type":
			dst = &req.Type
		case "branch":
			dst, present.branch = &req.Branch, true
		case "review":
			dst, present.review = &req.Review, true
		case "max_attempts":
			n, err := strconv.Atoi(string(raw))
			if err != nil || n < 1 || n > MaxMaxAttempts {
				return req, present, false
			}
			req.MaxAttempts = n
		case "metadata":
			if req.Metadata, ok = plainObject(raw); !ok {
				return req, present, false
			}
			if _, err := SimControlsOf(req.Metadata); err != nil {
				return req, present, false
			}
		default: // an unknown field, kept in metadata by decodeFields
			return req, present, false
		}
		if dst != nil {
			if !plain {
				return req, present, false
			}
			*dst = string(raw[1 : len(raw)-1])
		}
		if more, ok := s.more('}'); !more {
			return req, present, ok
		}
	}
}

// plainKey reads an object's key and the colon after it, when the key has
// no escape.
func (s *jsonScan) plainKey() ([]byte, bool) {
	start := s.i
	if s.peek() != '"' || !s.str() || s.escaped {
		return nil, false
	}
	key := s.b[start+1 : s.i-1]
	s.space()
	if s.peek() != ':' {
		return nil, false
	}
	s.i++
	s.space()
	return key, true
}

// plainObject reads a JSON object of valid JSON as encoding/json reads it
// into map[string]json.RawMessage: each value's bytes as written, copied;
// false if raw is not an object or a key has an escape.
func plainObject(raw []byte) (map[string]json.RawMessage, bool) {
	s := jsonScan{b: raw, strict: true, maxDepth: len(raw)}
	if s.peek() != '{' {
		return nil, false
	}
	m := map[string]json.RawMessage{}
	if s.open('}') {
		return m, true
	}
	for {
		key, ok := s.plainKey()
		if !ok {
			return nil, false
		}
		start := s.i
		if !s.value(1) {
			return nil, false
		}
		m[string(key)] = json.RawMessage(append([]byte(nil), raw[start:s.i]...))
		if more, ok := s.more('}'); !more {
			return m, ok
		}
	}
}
