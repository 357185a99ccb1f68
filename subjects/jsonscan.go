package subjects

import "encoding/json"

// jsonScan walks one JSON value without decoding it, for two questions
// whose answer may be a cautious no but never a wrong yes:
//   - canonicalJSON: would json.Marshal write this raw value unchanged?
//     (no white space, no HTML characters or U+2028/U+2029 in strings);
//   - strictJSON: would checkStrict accept this body? (white space
//     allowed, duplicate keys and nesting past the limit refused).
type jsonScan struct {
	b        []byte
	i        int
	strict   bool // strictJSON's rules, else canonicalJSON's
	maxDepth int
	escaped  bool // the last string read had a backslash
}

// jsonSafe holds the bytes a JSON string keeps as they are wherever they
// are: printable ASCII but '"', '\\', '<', '>' and '&', and the bytes of
// UTF-8 sequences but 0xE2 (which starts U+2028 and U+2029). A string of
// these alone is written unchanged.
var jsonSafe = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' && c != 0xE2
	}
	return t
}()

// jsonPlain holds the bytes a valid JSON string may hold unescaped: all
// but the controls, '"' and '\\'.
var jsonPlain = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// maxStrictKeys bounds the keys of one object strictJSON compares for
// duplicates, one against each; a larger object goes to checkStrict.
const maxStrictKeys = 64

// strictJSON reports whether body is one JSON value, with nothing after
// it but white space, no object with a duplicate key and no nesting
// deeper than maxDepth: that checkStrict accepts it. It says no to an
// object with more than maxStrictKeys keys or a key with an escape, which
// checkStrict then decides. body must be valid UTF-8.
func strictJSON(body []byte, maxDepth int) bool {
	s := jsonScan{b: body, strict: true, maxDepth: maxDepth}
	s.space()
	if !s.value(0) {
		return false
	}
	s.space()
	return s.i == len(body)
}

// validDepth is the nesting ValidJSON's scan follows before it leaves the
// value to json.Valid, which keeps its own stack: the scan recurses once
// per level, and a value an agent wrote may nest without end.
const validDepth = 1000

// ValidJSON reports what json.Valid(b) reports. The strict scan answers in
// one pass for most values, several times faster than encoding/json's
// scanner; json.Valid decides what the scan declines (a duplicate key, an
// object past maxStrictKeys keys, a key with an escape, deep nesting) and
// what is not JSON.
func ValidJSON(b []byte) bool {
	s := jsonScan{b: b, strict: true, maxDepth: validDepth}
	s.space()
	if s.value(0) {
		if s.space(); s.i == len(b) {
			return true
		}
	}
	return json.Valid(b)
}

func (s *jsonScan) peek() byte {
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

// space skips white space, which only strictJSON allows.
func (s *jsonScan) space() {
	if !s.strict {
		return
	}
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *jsonScan) value(depth int) bool {
	switch c := s.peek(); {
	case c == '{':
		return depth < s.maxDepth && s.object(depth+1)
	case c == '[':
		return depth < s.maxDepth && s.array(depth+1)
	case c == '"':
		return s.str()
	case c == 't':
		return s.literal("true")
	case c == 'f':
		return s.literal("false")
	case c == 'n':
		return s.literal("null")
	case c == '-' || '0' <= c && c <= '9':
		return s.number()
	}
	return false
}

func (s *jsonScan) object(depth int) bool {
	if s.open('}') {
		return true
	}
	var (
		store [8][]byte
		keys  = store[:0]
	)
	for {
		start := s.i
		if s.peek() != '"' || !s.str() {
			return false
		}
		if s.strict {
			key := s.b[start+1 : s.i-1]
			if s.escaped || len(keys) == maxStrictKeys {
				return false
			}
			for _, k := range keys {
				if string(k) == string(key) {
					return false
				}
			}
			keys = append(keys, key)
		}
		s.space()
		if s.peek() != ':' {
			return false
		}
		s.i++
		s.space()
		if !s.value(depth) {
			return false
		}
		if more, ok := s.more('}'); !more {
			return ok
		}
	}
}

func (s *jsonScan) array(depth int) bool {
	if s.open(']') {
		return true
	}
	for {
		if !s.value(depth) {
			return false
		}
		if more, ok := s.more(']'); !more {
			return ok
		}
	}
}

// open steps past an opening bracket and the white space after it, and
// reports whether the closing one follows at once (and steps past it).
func (s *jsonScan) open(closing byte) bool {
	s.i++
	s.space()
	if s.peek() == closing {
		s.i++
		return true
	}
	return false
}

// more steps past what follows a member: a comma (more is true) or the
// closing bracket (ok is true); anything else is not JSON.
func (s *jsonScan) more(closing byte) (more, ok bool) {
	s.space()
	switch s.peek() {
	case ',':
		s.i++
		s.space()
		return true, true
	case closing:
		s.i++
		return false, true
	}
	return false, false
}

func (s *jsonScan) str() bool {
	s.i++ // '"'
	s.escaped = false
	safe := &jsonSafe
	if s.strict {
		safe = &jsonPlain
	}
	for s.i < len(s.b) {
		if safe[s.b[s.i]] {
			s.i++
			continue
		}
		switch c := s.b[s.i]; {
		case c == '"':
			s.i++
			return true
		case c == '\\':
			s.escaped = true
			if s.i+1 >= len(s.b) {
				return false
			}
			switch s.b[s.i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				s.i += 2
			case 'u':
				if s.i+6 > len(s.b) {
					return false
				}
				for _, h := range s.b[s.i+2 : s.i+6] {
					if !('0' <= h && h <= '9' || 'a' <= h && h <= 'f' || 'A' <= h && h <= 'F') {
						return false
					}
				}
				s.i += 6
			default:
				return false
			}
		case c < 0x20, c == '<', c == '>', c == '&':
			return false
		case c == 0xE2 && s.i+2 < len(s.b) && s.b[s.i+1] == 0x80 && s.b[s.i+2]&^1 == 0xA8: // U+2028, U+2029
			return false
		default:
			s.i++
		}
	}
	return false
}

func (s *jsonScan) literal(lit string) bool {
	if len(s.b)-s.i < len(lit) || string(s.b[s.i:s.i+len(lit)]) != lit {
		return false
	}
	s.i += len(lit)
	return true
}

func (s *jsonScan) number() bool {
	if s.peek() == '-' {
		s.i++
	}
	switch c := s.peek(); {
	case c == '0':
		s.i++
	case '1' <= c && c <= '9':
		s.digits()
	default:
		return false
	}
	if s.peek() == '.' {
		s.i++
		if !s.digits() {
			return false
		}
	}
	if c := s.peek(); c == 'e' || c == 'E' {
		s.i++
		if c := s.peek(); c == '+' || c == '-' {
			s.i++
		}
		if !s.digits() {
			return false
		}
	}
	return true
}

// digits takes one or more digits.
func (s *jsonScan) digits() bool {
	start := s.i
	for s.i < len(s.b) && '0' <= s.b[s.i] && s.b[s.i] <= '9' {
		s.i++
	}
	return s.i > start
}
