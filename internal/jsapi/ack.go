package jsapi

import "bytes"

// parseAck reads an acknowledgement in the shapes the server writes from
// its template, and nothing else:
//
//	{"stream":"NAME","seq":N}
//	{"stream":"NAME","domain":"D","seq":N}
//
// each optionally ending ,"duplicate": true} (with or without the space)
// instead of }. ok is false for anything else, a refusal among them,
// which decodeAck then reads.
func parseAck(b []byte) (a Ack, ok bool) {
	rest, ok := cut(b, `{"stream":"`)
	if !ok {
		return Ack{}, false
	}
	if rest, ok = skipName(rest); !ok {
		return Ack{}, false
	}
	if r, isDomain := cut(rest, `,"domain":"`); isDomain {
		if rest, ok = skipName(r); !ok {
			return Ack{}, false
		}
	}
	if rest, ok = cut(rest, `,"seq":`); !ok {
		return Ack{}, false
	}
	if a.Seq, rest, ok = digits(rest); !ok {
		return Ack{}, false
	}
	switch string(rest) {
	case `}`:
		return a, true
	case `,"duplicate": true}`, `,"duplicate":true}`:
		a.Duplicate = true
		return a, true
	}
	return Ack{}, false
}

// cut returns b after prefix, and whether b began with it.
func cut(b []byte, prefix string) ([]byte, bool) {
	return bytes.CutPrefix(b, []byte(prefix))
}

// skipName returns b after a non-empty name and its closing quote; a name
// with an escape or a control character in it (which JSON escapes) is not
// read here.
func skipName(b []byte) ([]byte, bool) {
	end := bytes.IndexByte(b, '"')
	if end <= 0 {
		return nil, false
	}
	for _, c := range b[:end] {
		if c == '\\' || c < 0x20 {
			return nil, false
		}
	}
	return b[end+1:], true
}

// digits reads a decimal uint64 that fits, without a leading zero (the
// server writes none but the sequence 0).
func digits(b []byte) (n uint64, rest []byte, ok bool) {
	i := 0
	for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		d := uint64(b[i] - '0')
		if n > (1<<64-1-d)/10 {
			return 0, nil, false
		}
		n = n*10 + d
	}
	if i == 0 || (i > 1 && b[0] == '0') {
		return 0, nil, false
	}
	return n, b[i:], true
}
